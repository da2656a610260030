"""P-EAGLE: parallel-drafting EAGLE-3 (all draft tokens in one forward pass, mask tokens after the anchor).

vLLM serves it as method "eagle3" with `"parallel_drafting": true` and a P-EAGLE drafter (registry
PEagleDraftModel / Peagle{Llama,Qwen3}ForCausalLM, speculators type "peagle") from 0.22.0 to 0.33.0. vLLM 0.34.0
removes it: the registry names are gone, the speculators translation raises "P-EAGLE (parallel drafting
EAGLE-3) is not supported." (algos.py:53-55), and `parallel_drafting` is deprecated with no effect outside DFlash
and DSpark (speculative.py:559-561). SGLang never had it.

Trainers: SpecForge (configs/qwen3-8b-peagle.json: architectures ["PEagleDraftModel"], model_type llama,
draft_vocab_size) and speculators (src/speculators/models/peagle/config.py: speculators_model_type "peagle",
architectures ["PEagleSpeculator"], mask_token_id). A `mask_hidden` tensor is P-EAGLE's (checkpoint-formats.md 1.1).
"""

from __future__ import annotations

from typing import Any, Mapping

from compat.methods import CAPTURE_BEFORE, OUTPUT_OF, LayerIdKey, Recognition, architectures, speculators_type
from compat.methods._shapes import has

FAMILY = "peagle"
TITLE = "P-EAGLE"
DESCRIPTION = "parallel-drafting EAGLE-3: every draft token in one pass"
ORDER = 20
ARCHITECTURES = r"P[Ee]agle"  # the registered drafter classes of the family
TAKES_DRAFTER = True
LAYER_IDS = (
    LayerIdKey("eagle_aux_hidden_state_layer_ids", CAPTURE_BEFORE, ("speculators",),
               "speculators src/speculators/models/peagle/config.py (an Eagle3SpeculatorConfig)"),
    LayerIdKey("eagle_config.eagle_aux_hidden_state_layer_ids", OUTPUT_OF, ("specforge",),
               "SpecForge trains on hidden_states[id + 1] (specforge/modeling/draft)"),
)
TARGET_NEEDS = "the aux-hidden-state interface, as EAGLE-3"
THREADS = ("vLLM 0.34.0 vllm/transformers_utils/configs/speculators/algos.py:53-55",)
KEYS_READ = ("architectures", "speculators_model_type", "mask_hidden (tensor)")
PEAGLE_ARCHITECTURES = ("PEagleDraftModel", "PeagleLlamaForCausalLM", "PeagleQwen3ForCausalLM", "PEagleSpeculator")


def recognise(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | None:
    if speculators_type(config) == "peagle":
        return Recognition(FAMILY, "speculators", "speculators_model_type 'peagle'")
    archs = [a for a in architectures(config) if a in PEAGLE_ARCHITECTURES]
    if archs:
        return Recognition(FAMILY, "specforge" if "PEagleDraftModel" in archs else "unknown", f"architectures {archs}")
    mask = has(tensors, "mask_hidden")
    if mask:
        return Recognition(FAMILY, "unknown", f"the parallel-drafting tensor {mask}")
    return None
