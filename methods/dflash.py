"""DFlash: a block-diffusion drafter that fills a block of mask tokens in one pass, conditioned on several target
hidden states (`dflash_config.target_layer_ids`).

Layer ids. z-lab's reference and SpecForge write *output-of* ids: they train on `hidden_states[id + 1]`
(z-lab/dflash dflash/model.py:43-44 `offset = 1`; SpecForge specforge/modeling/draft/dflash.py:284-291). vLLM reads
`dflash_config.target_layer_ids` with +1 since vllm#40727 ("It is unfortunate that the DFlash and EAGLE layer
indexing semantics are different"; 0.20.0 read them as is), and its V2 runner read only the top-level EAGLE key before
0.24.0 (a DFlash drafter there is fed the default layers). speculators writes capture-before `aux_hidden_state_layer_ids`, which vLLM maps to
`eagle_aux_hidden_state_layer_ids` (+0) and `dflash_config.target_layer_ids` (i - 1) (algos.py update_dflash;
speculators#456, #440). The offsets each release applies are probed, never assumed here.

Block. `block_size` slots: slot 0 is the bonus (anchor) token, slots 1.. are predictions (DFlash's layout:
`sample_from_anchor` false; vLLM 0.34 refuses it true for DFlash).
"""

from __future__ import annotations

from typing import Any, Mapping

from compat.methods import CAPTURE_BEFORE, OUTPUT_OF, BlockRule, LayerIdKey, Recognition, architectures, speculators_type

FAMILY = "dflash"
TITLE = "DFlash"
DESCRIPTION = "block-diffusion drafter: a block of mask tokens filled in one pass"
ORDER = 30
ARCHITECTURES = r"DFlash|LiLiCorr|XPress|MuseGlimmerAssistant"  # the registered drafter classes of the family
TAKES_DRAFTER = True
LAYER_IDS = (
    LayerIdKey("dflash_config.target_layer_ids", OUTPUT_OF, ("z-lab-dflash", "specforge", "modelopt"),
               "z-lab/dflash dflash/model.py:43-44 and SpecForge specforge/modeling/draft/dflash.py:284-291: hidden_states[id + 1]"),
    LayerIdKey("aux_hidden_state_layer_ids", CAPTURE_BEFORE, ("speculators",),
               "speculators src/speculators/models/dflash/config.py; vLLM maps it to target_layer_ids i - 1 (vllm#40727)"),
)
BLOCK = BlockRule("block_size", "sample_from_anchor", trainers={"z-lab-dflash": False, "specforge": False, "speculators": False},
                  sources={"z-lab-dflash": "dflash/model.py:108-119 (block_output_ids[:, 1:] are the proposals)",
                           "specforge": "specforge/modeling/draft/dflash.py (block_output_ids[:, 1:] = draft tokens)",
                           "speculators": "src/speculators/models/dflash/config.py sample_from_anchor (default False)"})
TARGET_NEEDS = "the aux-hidden-state interface (vLLM SupportsEagle3; SGLang set_dflash_layers_to_capture)"
THREADS = ("https://github.com/vllm-project/vllm/pull/40727", "https://github.com/vllm-project/speculators/issues/456",
           "https://github.com/vllm-project/speculators/pull/440", "https://github.com/vllm-project/vllm/pull/42704")
KEYS_READ = ("architectures", "speculators_model_type", "dflash_config", "dflash_config.projector_type")


def recognise(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | None:
    kind = speculators_type(config)
    if kind in ("dflash", "dflash2"):
        return Recognition(FAMILY, "speculators", f"speculators_model_type {kind!r}")
    nested = config.get("dflash_config")
    archs = [a for a in architectures(config) if "DFlash" in a or a == "LiLiCorrDraftModel"]
    if isinstance(nested, Mapping) and nested.get("projector_type") == "dspark":
        return None  # SpecForge's DSpark: dspark.py
    if archs:
        return Recognition(FAMILY, "z-lab-dflash" if "DFlashDraftModel" in archs else "unknown", f"architectures {archs}")
    if isinstance(nested, Mapping) and not any("DSpark" in a for a in architectures(config)):
        return Recognition(FAMILY, "z-lab-dflash", "a dflash_config")
    return None
