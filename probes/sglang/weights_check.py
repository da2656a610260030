"""Whether SGLang's model loader refuses a model whose parameters were not all loaded from the checkpoint (see
probes/weights_check.py; no SGLang release read here has such a check: a parameter never loaded keeps its initial
values, without a word)."""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.weights_check import weights_check as read

LOADERS = "sglang/srt/model_loader"


@probe("sglang", "weights_check", "Model loader: parameters never loaded from the checkpoint refused", order=64)
def weights_check(tree: EngineTree) -> dict:
    return read(tree, LOADERS)
