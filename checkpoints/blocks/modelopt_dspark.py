"""NVIDIA ModelOpt's DSpark export: z-lab's DFlash format plus the DSpark head fields.

config.json (Model-Optimizer modelopt/torch/export/plugins/hf_spec_export.py:510-533, DSparkExporter over
DFlashExporter :351-400): architectures ["DFlashDraftModel"], model_type qwen3, block_size, dflash_config
{mask_token_id, target_layer_ids (output-of: hf_dspark.py:353 offset = 1), projector_type "dspark", shift_label,
markov_rank, markov_head_type, use_confidence_head}; head tensors markov_w1.* / markov_w2.* / gate_proj.* /
joint_proj.* / confidence_proj.*. The block layout is not written.
"""

from __future__ import annotations

NAME = "modelopt-dspark"
DESCRIPTION = "ModelOpt DSparkExporter: DFlashDraftModel with dflash_config.projector_type dspark and shift_label"
FAMILY = "dspark"
TRAINER = "modelopt"
SOURCE = "NVIDIA/Model-Optimizer modelopt/torch/export/plugins/hf_spec_export.py:510-533"
PRIORITY = 45


def detect(config: dict, tensor_names: set[str]) -> bool:
    nested = config.get("dflash_config")
    return isinstance(nested, dict) and nested.get("projector_type") == "dspark" and bool(
        {"shift_label", "use_confidence_head"} & set(nested))
