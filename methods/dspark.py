"""DSpark: DFlash's backbone plus a Markov head and a confidence head (DeepSpec; vllm#46995, SGLang 0.5.16).

ModelOpt exports DSpark in z-lab's DFlash format (architectures DFlashDraftModel, `dflash_config.projector_type`
"dspark", `shift_label`, Model-Optimizer hf_spec_export.py:510-533); its block layout is not written: doctor asks.
Layer ids, per trainer: SpecForge writes `dflash_config.target_layer_ids` output-of (it subclasses DFlash,
specforge/modeling/draft/dspark.py:283); the dense DeepSpec checkpoints (deepseek-ai/dspark_qwen3_8b_block7) write
a top-level `target_layer_ids`, output-of (vLLM adds 1: eagle3_utils.py:126-130 in 0.34.0); DeepSeek-V4 DSpark
heads ship in the target with `dspark_target_layer_ids` (+1, except model_type deepseek_v41, used as is);
speculators writes capture-before `aux_hidden_state_layer_ids`, mapped by vLLM to `target_layer_ids` i - 1.

Block width (sglang#30982). DeepSpec trains slot k to predict anchor+k+1: the block is gamma slots wide and the
anchor slot is a prediction (`sample_from_anchor` true, the engines' default). speculators (slot 0 loss-masked)
and SpecForge (`proposal_hidden = draft_hidden[:, -block_size + 1:]`, specforge/modeling/draft/dspark.py:334) train
the DFlash layout: gamma + 1 slots, slot 0 the bonus token. Read as the other layout, every slot is one position
early: accept length ~1.1 instead of ~4.05, no error (RedHatAI/GLM-5.2-speculator.dspark). speculators writes
`sample_from_anchor` (speculators#760; vLLM loads it since vllm#48639); SpecForge writes nothing, so an engine
reads its default. vLLM 0.25-0.26 read `dspark_bonus_anchor` instead (default false: anchor-first); SGLang before
0.5.19 reads neither (always gamma wide). Each release's reading is probed.
"""

from __future__ import annotations

from typing import Any, Mapping

from compat.methods import CAPTURE_BEFORE, OUTPUT_OF, BlockRule, LayerIdKey, Recognition, architectures, speculators_type

FAMILY = "dspark"
TITLE = "DSpark"
DESCRIPTION = "DFlash backbone with a Markov head and a confidence head (block drafter)"
ORDER = 25
ARCHITECTURES = r"DSpark"  # the registered drafter classes of the family
TAKES_DRAFTER = True
LAYER_IDS = (
    LayerIdKey("dflash_config.target_layer_ids", OUTPUT_OF, ("specforge", "modelopt"),
               "SpecForge configs/qwen3-8b-dspark.json (DSparkDraftModel(DFlashDraftModel), hidden_states[id + 1]); ModelOpt "
               "hf_spec_export.py:510 DSparkExporter, trained with offset = 1 (speculative/plugins/hf_dspark.py:353)"),
    LayerIdKey("target_layer_ids", OUTPUT_OF, ("deepspec",),
               "dense DSpark (deepseek-ai/dspark_qwen3_8b_block7); vLLM 0.34.0 eagle3_utils.py:126-130 adds 1"),
    LayerIdKey("dspark_target_layer_ids", OUTPUT_OF, ("target-checkpoint",),
               "DeepSeek-V4 DSpark heads in the target; vLLM 0.34.0 eagle3_utils.py:115-125 (+1, deepseek_v41 as is)"),
    LayerIdKey("aux_hidden_state_layer_ids", CAPTURE_BEFORE, ("speculators",),
               "speculators src/speculators/models/dspark/config.py; vLLM algos.py update_dspark maps i - 1"),
)
BLOCK = BlockRule("block_size", "sample_from_anchor", native=True,
                  trainers={"deepspec": True, "specforge": False, "speculators": False},
                  sources={"deepspec": "sglang#30982: block slot k predicts anchor+k+1, gamma wide",
                           "specforge": "specforge/modeling/draft/dspark.py:334 proposal_hidden = draft_hidden[:, -block_size + 1:]",
                           "speculators": "src/speculators/models/dspark/config.py sample_from_anchor (written; absent before speculators#760)"},
                  threads=("https://github.com/sgl-project/sglang/pull/30982", "https://github.com/vllm-project/vllm/pull/48639",
                           "https://github.com/ggml-org/llama.cpp/pull/26275"))
TARGET_NEEDS = "the aux-hidden-state interface (vLLM SupportsEagle3; SGLang set_dspark_layers_to_capture)"
THREADS = ("https://github.com/sgl-project/sglang/pull/30982", "https://github.com/vllm-project/vllm/pull/46995",
           "https://github.com/vllm-project/vllm/pull/48639")
KEYS_READ = ("architectures", "speculators_model_type", "dflash_config.projector_type", "dspark_target_layer_ids",
             "dspark_block_size", "markov_rank")


def recognise(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | None:
    if speculators_type(config) == "dspark":
        return Recognition(FAMILY, "speculators", "speculators_model_type 'dspark'")
    nested = config.get("dflash_config")
    archs = [a for a in architectures(config) if "DSpark" in a]
    if isinstance(nested, Mapping) and nested.get("projector_type") == "dspark":
        # ModelOpt's DSparkExporter (hf_spec_export.py:510-533) writes shift_label / use_confidence_head; SpecForge
        # (configs/qwen3-8b-dspark.json) enable_confidence_head / confidence_head_alpha
        trainer = "modelopt" if {"shift_label", "use_confidence_head"} & set(nested) else "specforge"
        return Recognition(FAMILY, trainer, f"dflash_config.projector_type 'dspark'{f' and architectures {archs}' if archs else ''}"
                           + (" with ModelOpt's shift_label" if trainer == "modelopt" else ""))
    if archs:
        dense = isinstance(config.get("target_layer_ids"), list)
        return Recognition(FAMILY, "deepspec" if dense else "unknown", f"architectures {archs}")
    for key in ("dspark_target_layer_ids", "dspark_block_size", "markov_rank"):
        if key in config:
            return Recognition(FAMILY, "target-checkpoint" if key == "dspark_target_layer_ids" else "unknown", f"the key {key}")
    return None
