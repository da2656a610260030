"""Every drafter tensor, under the name it has: does this release's loader take it?

A tensor the loader has no parameter for is a load error or is dropped (with a warning or without a
word), and a layer tensor it does not load stays at random init: acceptance collapses with no error,
so both fail. Each name is replayed through the release's own loader facts (the drafter_loader probe,
compat.probes.drafter_replay.land): prefixing, renames, skips, and the rule for unknown names, on the config the
release builds the drafter from (a speculators checkpoint after its translation). A skip the loader applies while a
config switch is off (`input_norm.` while norm_before_fc is unset) drops trained weights: named too. Each tensor lost
is named with the first later release whose loader takes it (bisected like every "it arrives in" fix).
"""

from __future__ import annotations

from compat.checkpoints import LLAMA_LAYER0, MLA_LAYER0, REQUIRED_TOP
from typing import Any

from packaging.version import Version

from compat.checks import FAIL, PASS, WARN, Ctx, LaterRelease, Result, check
from compat.core.output import plural
from compat.checks._drafter import first_release_loading, loaded_config, loader_entry, rejected, switched_off, tensor_fates


@check("drafter-tensors", "the release's loader takes every drafter tensor under its name", order=40,
       needs=("drafter loader",), fixes=("convert", "release"))
def drafter_tensors(ctx: Ctx) -> Result:
    d = ctx.drafter
    if d.layout is None:
        return Result(FAIL, d.read_error or "unknown drafter layout", None)
    cls, entry = loader_entry(ctx)
    if entry is None:
        return Result(WARN, f"cannot tell how this release loads {d.architecture}: no drafter class of its loader facts "
                      "takes that architecture (see drafter-architecture)", None)
    config = loaded_config(ctx)  # a speculators checkpoint: as the release's translation builds it
    refusal = rejected(entry, config)
    if refusal:
        return Result(FAIL, f"{cls} refuses this drafter at start-up: {refusal}", (entry.get("layers") or {}).get("location"))
    fates = tensor_fates(ctx, entry)
    lost = [n for n, f in fates.items() if f["fate"] in ("raise", "warn") or (f["fate"] == "skip" and "step" not in f)
            or switched_off(f)]
    arrivals = {n: first_release_loading(ctx, n) for n in lost}
    load_errors = [f"{n} ({_why(n, f)}{_arrival(arrivals[n])})" for n, f in fates.items() if f["fate"] == "raise"]
    dropped = [f"{n} ({_why(n, f)}{_arrival(arrivals[n])})" for n, f in fates.items()
               if n in lost and f["fate"] != "raise" and not switched_off(f)]
    switched = [f"{n} ({_why(n, f)}{_arrival(arrivals[n])})" for n, f in fates.items() if switched_off(f)]
    unsure = [n for n, f in fates.items() if f["fate"] == "depends"]
    loaded = {d.layout.to_canonical(n) for n, f in fates.items() if f["fate"] in ("load", "consume")}
    mla = any(".q_a_proj." in n for n in d.tensors)
    required = [*(f"layers.0.{t}" for t in (MLA_LAYER0 if mla else LLAMA_LAYER0)), *REQUIRED_TOP]
    random = [n for n in required if n not in loaded and n not in unsure]
    parts = [f"{label}: " + ", ".join(items[:6]) + (" ..." if len(items) > 6 else "")
             for label, items in (("loading fails on", load_errors), ("dropped (no such parameter)", dropped),
                                  ("skipped by the loader (trained weights unused)", switched),
                                  ("left at random init (missing)", random)) if items]
    where = (entry.get("unknown") or {}).get("location")
    if parts:
        release = _release(d, arrivals, random)
        sites = [f["step"]["location"] for f in fates.values() if switched_off(f)]
        return Result(FAIL, f"{cls}: " + "; ".join(parts), sites[0] if sites and not load_errors else where,
                      release=release, evidence={"skipped": dropped + switched, "random": random, "load_errors": load_errors,
                                                 "loaded_from": {n: a for n, a in arrivals.items() if a}})
    intended = [f"{n} ({f['step'].get('op')})" for n, f in fates.items() if "step" in f and f["fate"] in ("skip", "consume")]
    detail = f"{plural(len(d.tensors), 'tensor')} ({d.layout.NAME} layout) all land in {cls}"
    if intended:
        detail += "; by design: " + ", ".join(intended)
    if "embed_tokens.weight" not in loaded:
        detail += "; no embed_tokens: the target's embedding is shared"
    if unsure:
        return Result(WARN, detail + f"; depends on the target: {', '.join(unsure)}", where)
    return Result(PASS, detail, where)


def _release(d: Any, arrivals: dict[str, str | None], random: list[str]) -> LaterRelease | None:
    """The release from which every tensor lost loads (and so the layer tensors left at random init are loaded):
    None when not looked; `none_later` when no later release known here loads one of them."""
    if not arrivals or None in arrivals.values():
        return None
    if "" in arrivals.values():
        return LaterRelease(None, none_later=True)
    if not set(random) <= {d.layout.to_canonical(n) for n in arrivals}:
        return None  # a layer tensor the checkpoint lacks: no release loads what is not there
    return LaterRelease(max((a for a in arrivals.values() if a), key=Version))


def _arrival(first: str | None) -> str:
    return f"; loaded from {first}" if first else "; no later release known here loads it" if first == "" else ""


def _why(name: str, fate: dict[str, Any]) -> str:
    if switched_off(fate):
        return f"skipped while {fate['step']['when'][0]['test']}"
    if fate.get("not_built"):
        return f"{fate.get('module')} is not built for this config"
    looked_up = f"looked up as {fate['name']}: " if fate["name"] != name else ""
    return f"{looked_up}no such parameter" + (f", {fate['unknown']} {'raises' if fate['fate'] == 'raise' else 'drops it'}"
                                             if fate.get("unknown") else "")
