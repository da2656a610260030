"""The drafter's `architectures[0]` must resolve to a registered EAGLE-3 drafter class of the release.

vLLM's EAGLEConfig renames the drafter architecture (prefixing "Eagle3") and SpeculativeConfig
rewrites some drafter model_types to an MTP module; SGLang rewrites some draft architectures to
its NextN class. Either rewrite runs a different head than the one that was trained.
"""

from __future__ import annotations

from compat.checks import check
from compat.doctor.context import FAIL, PASS, result

# vLLM rewrites these drafter model_types to MTP in SpeculativeConfig.hf_config_override (vllm-eagle3.md 5.1);
# SGLang rewrites these drafter architectures to NextN in ModelConfig (sglang-eagle3.md 5.1).
VLLM_MTP_REWRITTEN_MODEL_TYPES = ("deepseek_v3", "deepseek_v32", "glm_moe_dsa", "deepseek_v4")
SGLANG_NEXTN_REWRITTEN_ARCHITECTURES = ("DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM")


def resolved_architecture(ctx) -> str | None:
    """The class name the release looks up for the drafter (vLLM's EAGLEConfig prefixes Eagle3)."""
    arch = ctx.drafter.architecture
    if ctx.engine == "vllm" and arch and not (arch.startswith("Eagle3") or arch.endswith("Eagle3")):
        return "Eagle3" + arch
    return arch


@check("drafter-architecture", "drafter architecture is a registered EAGLE-3 drafter", order=30,
       needs=("eagle3_drafters",), fixes=("convert",))
def drafter_architecture(ctx) -> dict:
    arch = ctx.drafter.architecture
    registered = ctx.facts("eagle3_drafters")
    where = ctx.drafter_location(arch) or ctx.first_location("eagle3_drafter_classes")
    if not arch:
        return result(FAIL, "the drafter config.json has no architectures", where)
    if ctx.engine == "vllm":
        model_type = ctx.drafter.config.get("model_type")
        if model_type in VLLM_MTP_REWRITTEN_MODEL_TYPES:
            return result(FAIL, f"drafter model_type {model_type!r}: vLLM's hf_config_override rewrites it to deepseek_mtp "
                          "(an MTP module, not this EAGLE-3 head)", where)
        resolved = resolved_architecture(ctx)
        if resolved in registered:
            how = "" if resolved == arch else f" (vLLM's EAGLEConfig renames {arch} to {resolved})"
            return result(PASS, f"{resolved} is registered{how}", ctx.drafter_location(resolved) or where)
        return result(FAIL, f"{arch} resolves to {resolved}, which this release does not register "
                      f"(registered: {', '.join(registered) or 'none'})", where)
    if arch in SGLANG_NEXTN_REWRITTEN_ARCHITECTURES:
        return result(FAIL, f"{arch}: SGLang's ModelConfig rewrites a draft with this architecture to the NextN (MTP) class", where)
    if arch in registered:
        return result(PASS, f"{arch} is registered", where)
    return result(FAIL, f"{arch} is not a registered EAGLE-3 drafter here (SGLang renames nothing; "
                  f"registered: {', '.join(registered) or 'none'})", where)
