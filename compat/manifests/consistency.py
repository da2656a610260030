"""Resources that serve the same model must agree: one release and one drafter. Two Deployments of one target on
different images (a bump merged in one overlay and not the other), or with different drafters, are each flagged at
their own line, naming the other (vllm#51660 is EAGLE-3 on two KServe replicas)."""

from __future__ import annotations

from collections import defaultdict

from compat.manifests.checking import Checked
from compat.manifests.model import Problem


def model_key(checked: Checked) -> str | None:
    serving, target = checked.serving, checked.target
    if target and target == serving.extra.get("model_mount"):
        target = serving.extra.get("model_source") or target
    return target.rstrip("/") if target else None


def disagreements(all_checked: list[Checked]) -> list[Problem]:
    groups: dict[str, list[Checked]] = defaultdict(list)
    for checked in all_checked:
        key = model_key(checked)
        if key and checked.line is not None:
            groups[key].append(checked)
    out = []
    for model, members in sorted(groups.items()):
        for what, of in (("release", lambda c: f"{c.engine} {c.version}" if c.version else None),
                         ("drafter", lambda c: c.drafter)):  # a pool without a drafter (prefill) disagrees with none
            values = {of(c) for c in members} - {None}
            if len(values) < 2:
                continue
            for c in members:
                mine = of(c)
                if mine is None:
                    continue
                other = next(o for o in members if of(o) not in (None, mine))
                where = (c.serving.image.where if what == "release" and c.serving.image else
                         next((w.where for w in c.serving.words if c.drafter and c.drafter in w.text), c.serving.where))
                out.append(Problem(where, f"{c.serving.name} serves {model} with {what} {mine}; {other.serving.name} "
                                   f"({other.serving.where}) serves it with {of(other)}" +
                                   (f" ({len(values)} {what}s in all)" if len(values) > 2 else ""),
                                   f"serve {model} with one {what} everywhere", kind="mismatch", resource=c.serving.resource))
    return out
