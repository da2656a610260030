"""What vLLM's config-time EAGLE-3 whitelist says about the target, for the two checks that need it.

target-whitelist reports it; target-interface says whether a target without the aux-hidden-state
interface gets past it (then it fails later, at model load). One reading, here, for both.
"""

from __future__ import annotations

from dataclasses import dataclass

from compat import engines
from compat.checks._context import Ctx


@dataclass(frozen=True)
class WhitelistAnswer:
    admits: bool  # SpeculativeConfig lets this target's model_type through (or there is no whitelist)
    detail: str
    location: str | None


def whitelist_answer(ctx: Ctx) -> WhitelistAnswer:
    """What the release's whitelist does with the target's model_type (substring match, as vLLM tests it)."""
    wl = ctx.fact("eagle3_whitelist")
    if engines.get(ctx.engine).target_gate != "interface" or not wl.get("present"):  # vLLM's model-type list
        return WhitelistAnswer(True, wl.get("reason") or "no config-time model-type whitelist in this release", wl.get("location"))
    gated = wl.get("methods_gated") or ["eagle3"]
    if "eagle3" not in gated:
        return WhitelistAnswer(True, f"the whitelist gates {gated}, not eagle3", wl.get("location"))
    model_type = ctx.target.model_type or ""
    hits = [entry for entry in wl.get("model_types") or [] if entry in model_type]  # substring, as vLLM tests it
    where = wl.get("list_location") or wl.get("location")
    if hits:
        return WhitelistAnswer(True, f"model_type {model_type!r} matches {hits[0]!r} "
                               f"({wl.get('variable') or 'inline list'}, substring match)", where)
    return WhitelistAnswer(False, f"model_type {model_type!r} is not on {wl.get('variable') or 'the list'} {wl.get('model_types')}: "
                           f"SpeculativeConfig refuses it at start-up ({wl.get('raises') or 'ValueError'}: "
                           f"\"... only supported for [...] models\")", where)


def passes_config_validation(ctx: Ctx) -> bool:
    """Known to get past the whitelist: a failed whitelist probe counts as not known (its check warns then)."""
    return ctx.probe_error("eagle3_whitelist") is None and whitelist_answer(ctx).admits
