"""Every drafter tensor, under the name it has: does this release's loader take it?

A tensor the loader has no parameter for is a load error or is dropped (with a warning or without a
word), and a layer tensor it does not load stays at random init: acceptance collapses with no error,
so both fail. Each name is replayed through the release's own loader facts (the drafter_loader probe,
compat.probes.drafter_replay.land): prefixing, renames, skips, and the rule for unknown names.
"""

from __future__ import annotations

from compat.checkpoints import LLAMA_LAYER0, MLA_LAYER0, REQUIRED_TOP
from typing import Any

from compat.checks import FAIL, PASS, WARN, Ctx, Result, check
from compat.checks._drafter import loader_entry, rejected, target_vocab
from compat.probes.drafter_replay import land


@check("drafter-tensors", "the release's loader takes every drafter tensor under its name", order=40,
       needs=("drafter_loader",), fixes=("convert",))
def drafter_tensors(ctx: Ctx) -> Result:
    d = ctx.drafter
    if d.layout is None:
        return Result(FAIL, d.read_error or "unknown drafter layout", None)
    cls, entry = loader_entry(ctx)
    if entry is None:
        return Result(WARN, f"cannot tell how this release loads {d.architecture}: no drafter class of its loader facts "
                      "takes that architecture (see drafter-architecture)", None)
    refusal = rejected(entry, d.config)
    if refusal:
        return Result(FAIL, f"{cls} refuses this drafter at start-up: {refusal}", (entry.get("layers") or {}).get("location"))
    fates = {name: land(entry, name, d.config, set(d.tensors), target_vocab(ctx)) for name in sorted(d.tensors)}
    load_errors = [f"{n} ({_why(n, f)})" for n, f in fates.items() if f["fate"] == "raise"]
    dropped = [f"{n} ({_why(n, f)})" for n, f in fates.items() if f["fate"] in ("skip", "warn") and "step" not in f]
    unsure = [n for n, f in fates.items() if f["fate"] == "depends"]
    loaded = {d.layout.to_canonical(n) for n, f in fates.items() if f["fate"] in ("load", "consume")}
    mla = any(".q_a_proj." in n for n in d.tensors)
    required = [*(f"layers.0.{t}" for t in (MLA_LAYER0 if mla else LLAMA_LAYER0)), *REQUIRED_TOP]
    random = [n for n in required if n not in loaded and n not in unsure]
    parts = [f"{label}: " + ", ".join(items[:6]) + (" ..." if len(items) > 6 else "")
             for label, items in (("loading fails on", load_errors), ("dropped (no such parameter)", dropped),
                                  ("left at random init (missing)", random)) if items]
    where = (entry.get("unknown") or {}).get("location")
    if parts:
        return Result(FAIL, f"{cls}: " + "; ".join(parts), where,
                      evidence={"skipped": dropped, "random": random, "load_errors": load_errors})
    intended = [f"{n} ({f['step'].get('op')})" for n, f in fates.items() if "step" in f and f["fate"] in ("skip", "consume")]
    detail = f"{len(d.tensors)} tensors ({d.layout.NAME} layout) all land in {cls}"
    if intended:
        detail += "; by design: " + ", ".join(intended)
    if "embed_tokens.weight" not in loaded:
        detail += "; no embed_tokens: the target's embedding is shared"
    if unsure:
        return Result(WARN, detail + f"; depends on the target: {', '.join(unsure)}", where)
    return Result(PASS, detail, where)


def _why(name: str, fate: dict[str, Any]) -> str:
    if fate.get("not_built"):
        return f"{fate.get('module')} is not built for this config"
    looked_up = f"looked up as {fate['name']}: " if fate["name"] != name else ""
    return f"{looked_up}no such parameter" + (f", {fate['unknown']} {'raises' if fate['fate'] == 'raise' else 'drops it'}"
                                             if fate.get("unknown") else "")
