"""SpecForge's DSpark drafter: a DFlash drafter with a Markov and a confidence head.

config.json (configs/qwen3-8b-dspark.json): architectures ["DSparkDraftModel"], auto_map dspark.DSparkDraftModel,
block_size, dflash_config {projector_type "dspark", markov_rank, markov_head_type, enable_confidence_head,
confidence_head_alpha, mask_token_id, target_layer_ids (output-of)}. Its block is the bonus-anchor one
(specforge/modeling/draft/dspark.py:334) and it writes no sample_from_anchor.
"""

from __future__ import annotations

from compat.methods import architectures

NAME = "specforge-dspark"
DESCRIPTION = "SpecForge DSparkDraftModel: dflash_config.projector_type dspark, no sample_from_anchor"
FAMILY = "dspark"
TRAINER = "specforge"
SOURCE = "sgl-project/SpecForge configs/qwen3-8b-dspark.json, specforge/modeling/draft/dspark.py:283-334"
PRIORITY = 40


def detect(config: dict, tensor_names: set[str]) -> bool:
    nested = config.get("dflash_config")
    return (isinstance(nested, dict) and nested.get("projector_type") == "dspark"
            and not {"shift_label", "use_confidence_head"} & set(nested)
            and ("DSparkDraftModel" in architectures(config) or "enable_confidence_head" in nested))
