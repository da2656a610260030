"""Whether vLLM's model loader refuses a model whose parameters were not all loaded from the checkpoint (see
probes/weights_check.py: the DefaultModelLoader's strict check, on for models that are not quantized)."""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.weights_check import weights_check as read

LOADERS = "vllm/model_executor/model_loader"


@probe("vllm", "weights_check", "Model loader: parameters never loaded from the checkpoint refused", order=64)
def weights_check(tree: EngineTree) -> dict:
    return read(tree, LOADERS)
