"""The release's own loader for the method's class takes the checkpoint, and finds every tensor it needs there.

For every method with a model (EAGLE, MTP heads, Medusa and MLP heads, DFlash, DSpark, P-EAGLE, a draft model;
EAGLE-3's own check is drafter-tensors), the class the release builds (checks/_method_loader.py: the drafter's
architecture as the release renames it, the target's for MTP heads) is read from the release
(compat.probes.model_loader: its renames, helpers, skips, the rule for unknown names) and replayed on the checkpoint's
names: the drafter's tensor headers, or for MTP heads the target's own index (names only: no weight is read).

FAIL where the release refuses: an `assert`/`raise` the loader makes on the config before loading, a name it looks up
without a guard (KeyError; vLLM's AutoWeightsLoader: "There is no module or parameter named ..."), a module no tensor
reaches when the class raises on it (vLLM's DeepSeekMTP from 0.17.0, vllm#35548) or the loader compares what was
loaded with the parameters (vLLM, unquantized). WARN where it loads silently wrong: tensors it drops, modules left at
their initial values (a quantized checkpoint shipped without its MTP layers serves at acceptance 0).
"""

from __future__ import annotations

from compat.checks import FAIL, PASS, WARN, Ctx, LaterRelease, Result, check
from compat.checks._method_loader import judge, module_words, on_missing, source

FAMILIES = ("eagle", "peagle", "mtp", "medusa", "dflash", "dspark", "draft_model")


@check("method-tensors", "loader: the release's class for the method loads the checkpoint's tensors, and finds every "
       "one it needs", order=41, needs=("drafter renames", "weights check"), fixes=("release",), methods=FAMILIES)
def method_tensors(ctx: Ctx) -> Result:
    result = _judged(ctx)
    if result.verdict == FAIL:  # a later release whose own loader takes this checkpoint (Medusa's old names: 0.25.0)
        first = ctx.first_release_where(f"method-tensors {ctx.drafter.path} {ctx.target.path}",
                                        lambda report: _judged(ctx.with_report(report)).verdict == PASS)
        result.release = LaterRelease(first or None, none_later=first == "") if first is not None else None
    return result


def _judged(ctx: Ctx) -> Result:
    src = source(ctx)
    if isinstance(src, str):
        return Result(WARN, f"cannot tell what the release's loader does: {src}")
    results = []
    for arch in (src.architecture, *src.candidates):
        entry = ctx.class_loader(arch)
        if entry is None:
            return Result(WARN, "cannot tell what the release's loader does: its classes were not read here")
        if entry.get("error"):
            results.append(Result(WARN, f"cannot tell how {arch} loads: {entry['error']}", entry.get("registered")))
            continue
        results.append(_verdict(ctx, src, arch, entry))
    readable = [r for r in results if not r.detail.startswith("cannot tell")] or results
    first = readable[0]
    if len({r.verdict for r in readable}) > 1:
        return Result(WARN, f"depends on which class the release picks ({src.how}, {src.location}): "
                      + " | ".join(r.detail for r in readable), first.location, evidence=first.evidence)
    return first


def _verdict(ctx: Ctx, src, arch: str, entry: dict) -> Result:
    j = judge(ctx, src, entry)
    cls = f"{j.cls} ({arch}, {src.how})"
    evidence = {"class": j.cls, "architecture": arch, "class_location": entry.get("location"), "names_from": src.names_from,
                "load_errors": j.raises, "dropped": j.dropped, "missing": [m["module"] for m in j.missing]}
    if j.refused is not None:
        return Result(FAIL, f"{cls} refuses this config before loading: {j.refused[0]}", j.refused[1], evidence=evidence)
    unknown = (entry.get("unknown") or {}).get("location")
    parts: list[str] = []
    verdict, where = PASS, entry.get("location")
    if j.raises:
        verdict, where = FAIL, unknown
        parts.append(f"loading fails on {_few(j.raises)} (no such parameter: {(entry.get('unknown') or {}).get('by')} "
                     "raises)")
    needed = [m for m in j.missing if not m.get("depends")]
    if needed:
        kind, at, words = on_missing(ctx, src, j)
        parts.append(f"no tensor of {src.names_from} reaches {_few(module_words(needed))}: {words}")
        if kind == "raise":
            verdict, where = FAIL, at or where
        elif verdict == PASS:
            verdict, where = WARN, at or where
    if j.dropped:
        parts.append(f"dropped without being loaded: {_few(j.dropped)}")
        verdict = WARN if verdict == PASS else verdict
    if verdict != PASS:
        return Result(verdict, f"{cls}: " + "; ".join(parts), where, evidence=evidence,
                      remedy="a checkpoint with the tensors the class loads, under the names it looks them up by"
                      if verdict == FAIL else None)
    unsure = j.unsure + [m["module"] for m in j.missing if m.get("depends")]
    shown = (f"{j.loaded} of {len(src.names)} tensors" if j.replayed in (0, len(src.names))
             else f"{j.loaded} of {j.replayed} tensor shapes (per layer; {len(src.names)} names)")
    detail = f"{shown} of {src.names_from} land in {cls}"
    if unsure:
        return Result(WARN, detail + f"; cannot tell for {_few(unsure)}", where, evidence=evidence)
    return Result(PASS, detail + "; every module it needs gets its tensors", where, evidence=evidence)


def _few(items: list[str]) -> str:
    return ", ".join(items[:5]) + (f" ... ({len(items)} in all)" if len(items) > 5 else "")
