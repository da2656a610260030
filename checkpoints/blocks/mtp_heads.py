"""MTP heads inside a target checkpoint: DeepSeek-V3 / Kimi / GLM keep them as extra decoder layers
model.layers.{num_hidden_layers + i}.{enorm, hnorm, eh_proj, shared_head.*} (num_nextn_predict_layers of them);
Qwen3-Next / Qwen3.5 as mtp.* (mtp_num_hidden_layers); MiMo as model.mtp_layers.*. Engines read them from the
target itself: nothing to convert, only to find (compat.methods.mtp.heads says which layer holds them)."""

from __future__ import annotations

from compat.methods import get_method

NAME = "mtp-heads"
DESCRIPTION = "MTP heads in the target checkpoint (model.layers.{n}, mtp.*, model.mtp_layers.*)"
FAMILY = "mtp"
TRAINER = "target-checkpoint"
SOURCE = "DeepSeek-V3 config.json num_nextn_predict_layers; vLLM deepseek_mtp.py, SGLang deepseek_nextn.py"
PRIORITY = 10


def detect(config: dict, tensor_names: set[str]) -> bool:
    found = get_method("mtp").recognise(config, dict.fromkeys(tensor_names))
    return found is not None
