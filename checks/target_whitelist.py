"""vLLM's config-time whitelist of EAGLE-3 target model_types (renamed in 0.17.0, gone in 0.22.0).

vLLM tests `hf_text_config.model_type` against the list by substring and refuses the start-up with
"Eagle3 is only supported for [...] models". SGLang has no such list.
"""

from __future__ import annotations

from compat.checks import check
from compat.doctor.context import FAIL, PASS, result


@check("target-whitelist", "target model_type is on the release's EAGLE-3 whitelist", order=10,
       needs=("eagle3_whitelist",), fixes=("patch", "release"))
def target_whitelist(ctx) -> dict:
    wl = ctx.fact("eagle3_whitelist")
    if ctx.engine != "vllm" or not wl.get("present"):
        return result(PASS, wl.get("reason") or "no config-time model-type whitelist in this release", wl.get("location"))
    gated = wl.get("methods_gated") or ["eagle3"]
    if "eagle3" not in gated:
        return result(PASS, f"the whitelist gates {gated}, not eagle3", wl.get("location"))
    model_type = ctx.target.model_type or ""
    hits = [entry for entry in wl.get("model_types") or [] if entry in model_type]  # substring, as vLLM tests it
    where = wl.get("list_location") or wl.get("location")
    if hits:
        return result(PASS, f"model_type {model_type!r} matches {hits[0]!r} "
                      f"({wl.get('variable') or 'inline list'}, substring match)", where)
    return result(FAIL, f"model_type {model_type!r} is not on {wl.get('variable') or 'the list'} {wl.get('model_types')}: "
                  f"SpeculativeConfig refuses it at start-up ({wl.get('raises') or 'ValueError'}: "
                  f"\"... only supported for [...] models\")", where)
