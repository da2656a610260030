"""EAGLE-3: a one-layer drafter fed three (or more) of the target's hidden states, fused by `fc` [H, k*H].

What was built first: doctor's EAGLE-3 checks (checks/, the layer-id conventions in checkpoints/_conventions.py)
carry the detail; this file says how an EAGLE-3 drafter is recognised. The names that run it are each engine's
(METHOD_NAMES in compat/engines/<name>.py): vLLM's `extract_hidden_states` (0.17.0 on) takes the same option but
drafts nothing: it dumps the target's aux hidden states, to train EAGLE-3 drafters (speculators' data generation).
"""

from __future__ import annotations

from typing import Any, Mapping

from compat.methods import CAPTURE_BEFORE, OUTPUT_OF, LayerIdKey, Recognition, architectures, speculators_type
from compat.methods._shapes import fc_inputs, has

FAMILY = "eagle3"
TITLE = "EAGLE-3"
DESCRIPTION = "one-layer drafter on three target hidden states (EAGLE-3, EAGLE-3.1)"
ORDER = 60  # after P-EAGLE, DFlash and DSpark, whose drafters carry EAGLE-3's keys too
ARCHITECTURES = r"Eagle3|LlamaForCausalLMEagle3|ExtractHiddenStates"  # the registered drafter classes of the family
TAKES_DRAFTER = True
LAYER_IDS = (
    LayerIdKey("eagle_aux_hidden_state_layer_ids", CAPTURE_BEFORE, ("speculators",),
               "vllm-project/speculators src/speculators/models/eagle3 (default [2, n//2, n-3]); checkpoint-formats.md 4.2"),
    LayerIdKey("eagle_config.eagle_aux_hidden_state_layer_ids", OUTPUT_OF, ("specforge", "modelopt"),
               "SpecForge trains on hidden_states[id + 1]; ModelOpt HF export hooks layer outputs (checkpoint-formats.md 4.2)"),
)
TARGET_NEEDS = "the aux-hidden-state interface (vLLM SupportsEagle3; SGLang set_eagle3_layers_to_capture)"
KEYS_READ = ("architectures", "speculators_model_type", "eagle_aux_hidden_state_layer_ids",
             "eagle_config.eagle_aux_hidden_state_layer_ids", "fc.weight (its input width)", "d2t/t2d")


def recognise(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | None:
    if speculators_type(config) == "eagle3":
        return Recognition(FAMILY, "speculators", "speculators_model_type 'eagle3'")
    archs = [a for a in architectures(config) if "Eagle3" in a]
    if archs:
        return Recognition(FAMILY, _trainer(config, tensors), f"architectures {archs}")
    nested = config.get("eagle_config")
    for where, holder in (("", config), ("eagle_config.", nested if isinstance(nested, Mapping) else {})):
        if isinstance(holder.get("eagle_aux_hidden_state_layer_ids"), list):
            return Recognition(FAMILY, _trainer(config, tensors), f"{where}eagle_aux_hidden_state_layer_ids")
    k = fc_inputs(tensors, config.get("target_hidden_size") or config.get("hidden_size"))
    if k is not None and k >= 3:
        return Recognition(FAMILY, _trainer(config, tensors), f"fc.weight fuses {k} hidden states")
    maps = has(tensors, "d2t", "t2d")
    if maps and has(tensors, "fc.weight"):
        return Recognition(FAMILY, _trainer(config, tensors), f"fc.weight and the vocab map {maps}")
    return None


def _trainer(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> str:
    """The trainer the drafter's layout implies (compat.checkpoints: the EAGLE-3 layouts)."""
    from compat.checkpoints import detect_layout

    layouts = detect_layout(dict(config), set(tensors))
    return str(layouts[0].trainer(dict(config))) if layouts else "unknown"
