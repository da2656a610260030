"""The dense DeepSpec DSpark checkpoints (deepseek-ai/dspark_qwen3_8b_block7): vLLM's Qwen3DSparkModel.

config.json: architectures ["Qwen3DSparkModel"], block_size / dspark_block_size, markov_rank, top-level
target_layer_ids (output-of: vLLM 0.34.0 eagle3_utils.py:126-130 adds 1). Anchor-first block (sglang#30982).
"""

from __future__ import annotations

from compat.methods import architectures

NAME = "deepspec-dspark"
DESCRIPTION = "DeepSpec dense DSpark (Qwen3DSparkModel): top-level target_layer_ids, anchor-first block"
FAMILY = "dspark"
TRAINER = "deepspec"
SOURCE = "vLLM 0.34.0 vllm/model_executor/models/qwen3_dspark.py; vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:126-130"
PRIORITY = 35


def detect(config: dict, tensor_names: set[str]) -> bool:
    return (any("DSpark" in a for a in architectures(config)) and isinstance(config.get("target_layer_ids"), list)
            and "speculators_model_type" not in config)
