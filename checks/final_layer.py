"""An aux id at the last layer's output (capture-before n, n = num_hidden_layers) must be one the target
can capture in this release.

A forward that records each layer's input (`if idx in self.aux_hidden_state_layers` before the layer)
never reaches n: the target hands the drafter one aux state fewer than its fc takes, and the first
draft step fails on the shape or drafts from fewer states (vllm#46788 for DeepSeek/Kimi on vLLM
0.18 - 0.24; sglang#32226 for gpt-oss, whose ids [24, 30, 36] SGLang shifted to n and beyond). Which
releases reach it is the final_layer_capture probe's answer, per target class; ids beyond n are
aux-inputs' (no release captures those).
"""

from __future__ import annotations

from typing import Any

from compat import aux_layers
from compat.checks import FAIL, PASS, WARN, Ctx, LaterRelease, Result, check
from compat.checks._drafter import loaded_config

FACT = "final_layer_capture"


@check("final-layer", "the target captures the last layer's output when the drafter is fed it (id n)", order=66,
       needs=("final layer capture", "layer ids", "eagle3 targets"), fixes=("patch", "release"))
def final_layer(ctx: Ctx) -> Result:
    n = ctx.target.num_hidden_layers
    if not n:
        return Result(WARN, "cannot tell: the target config has no num_hidden_layers", None)
    feeds = aux_layers.fed_layers(ctx.report, loaded_config(ctx), n, ctx.target.architecture)
    at_end = [f for f in feeds if f.ids and n in f.ids]
    cls, reach = capture_of(ctx)
    capture = (f"{cls} captures {reach['how']} (through {reach['model']})" if reach and cls
               else "the probe found no capture loop for the target")
    if not at_end:
        fed = "; ".join(f"{f.by}: {f.ids}" for f in feeds)
        return Result(PASS, f"no layer id fed reaches the last layer's output (id {n}): {fed}", (reach or {}).get("location"))
    asked = "; ".join(f"{f.by} is fed id {n} ({f.how})" for f in at_end)
    if reach is None or cls is None:
        return Result(WARN, f"cannot tell whether id {n}, the last layer's output, is captured: {asked}; {capture}", None)
    if reach["final"]:
        return Result(PASS, f"{asked}: {capture}", reach.get("location"))
    later = ctx.first_release_with(FACT, cls)
    when = (f"; {cls} captures it from {ctx.engine} {later}" if later
            else f"; no later {ctx.engine} release known here captures it for {cls}" if later == "" else "")
    return Result(FAIL, f"{asked}, the last layer's output, but {capture}: the drafter gets one aux state fewer than its "
                  f"fc takes (the first draft step fails on the shape, or drafts from fewer states){when}",
                  reach.get("location"), evidence={"final_layer": {"id": n, "class": cls, **reach}},
                  release=LaterRelease(later) if later else None)


def capture_of(ctx: Ctx) -> tuple[str | None, dict[str, Any] | None]:
    """(target class, {"final", "model", "how", "location"}) for the first of the target's architectures the
    probe resolved (Kimi-K2.5's wrapper delegates at run time: its text model's class answers)."""
    fact = ctx.fact(FACT)
    before = fact.get("before_final") or {}
    for arch in ctx.target.architectures:
        entry = ctx.target_entry(arch)
        cls = (entry or {}).get("class") or arch
        for name in dict.fromkeys((cls, arch)):
            if isinstance(fact.get(name), dict) and name not in ("before_final", "unresolved"):
                return name, {"final": True, **fact[name]}
            if isinstance(before.get(name), dict):
                return name, {"final": False, **before[name]}
    return None, None
