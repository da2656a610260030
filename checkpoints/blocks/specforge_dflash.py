"""SpecForge's and z-lab's DFlash drafter (the same config: SpecForge's DFlashDraftModel is z-lab's).

config.json: architectures ["DFlashDraftModel"], auto_map {"AutoModel": "dflash.DFlashDraftModel"}, model_type qwen3,
block_size, num_target_layers, dflash_config {mask_token_id, target_layer_ids} (output-of: hidden_states[id + 1]);
tensors: fc.weight [H, k*H], hidden_norm.weight, layers.{i}.*, norm.weight (no embed_tokens / lm_head: the target's).
"""

from __future__ import annotations

from compat.methods import architectures

NAME = "specforge-dflash"
DESCRIPTION = "SpecForge / z-lab DFlashDraftModel: dflash_config.target_layer_ids output-of"
FAMILY = "dflash"
TRAINER = "z-lab-dflash"
SOURCE = "sgl-project/SpecForge configs/qwen3-8b-dflash.json, specforge/modeling/draft/dflash.py:284-291; z-lab/dflash dflash/model.py:302-320"
PRIORITY = 30


def detect(config: dict, tensor_names: set[str]) -> bool:
    nested = config.get("dflash_config")
    return ("DFlashDraftModel" in architectures(config) and isinstance(nested, dict)
            and nested.get("projector_type") != "dspark" and "speculators_model_type" not in config)
