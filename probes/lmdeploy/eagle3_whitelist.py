"""Whether LMDeploy checks an EAGLE-3 target's model_type against a list at config time (vLLM's whitelist): it does not.

Read from the refusals on its speculative path (the speculative_validation probe: the CLI's get_speculative_config,
SpeculativeConfig, SpecDecodeConfig.from_config, the function that builds it, the DFlash validators, the proposer
registry): none tests the target's `model_type` or `architectures` against a list. A target is admitted per config
builder instead (target_gates: `assert spec_method == 'deepseek_mtp'` in DeepSeek-V2/V3's builder refuses eagle3 there),
and fed the layers its class captures (eagle3_targets). Should a release add such a check, it is reported here with
its condition and line.
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.lmdeploy.speculative_validation import speculative_validation

CONFIG_STAGES = ("cli", "config", "engine")


@probe("lmdeploy", "eagle3_whitelist", "EAGLE-3 target model_type whitelist (config time): none", order=42)
def eagle3_whitelist(tree: EngineTree) -> dict:
    validation = speculative_validation(tree)
    if not validation.get("present"):
        return {"present": False, "reason": validation.get("reason")}
    sites = [s for s in validation["sites"] if s["stage"] in CONFIG_STAGES]
    listed = [s for s in sites if any(word in (s.get("when") or "") for word in ("model_type", "architectures"))]
    if listed:  # a config-time check on the target's type: said as found, for the check to judge
        first = listed[0]
        return {"present": True, "variable": None, "model_types": [], "condition": first["when"],
                "message": first["message"], "raises": first["raises"], "location": first["location"]}
    return {"present": False, "reason": f"no config-time model-type whitelist: none of the {len(sites)} refusals on the "
            "speculative config path tests the target's model_type; each config builder admits methods for the configs "
            "it takes (target_gates)"}
