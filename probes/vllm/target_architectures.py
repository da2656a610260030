"""Every target architecture the release's model registry knows, EAGLE-3 capable or not.

The doctor needs this before it offers a patch: a patch can give a registered class the EAGLE-3
hook, but it cannot make a release load an architecture it has never heard of (vLLM 0.13.0 has no
KimiK25ForConditionalGeneration; it arrives in 0.15.0). Read from the registry's dict literals
(`_TEXT_GENERATION_MODELS`, `_MULTIMODAL_MODELS`, ...), the same reading eagle3_targets uses.

JSON: {"Architecture": "vllm/model_executor/models/registry.py:LINE", ...}
"""

from __future__ import annotations

import re

from compat.probes import probe
from compat.probes.vllm._common import registry_entries, registry_file
from compat.core.tree import EngineTree

TARGET_TABLES = re.compile(r"GENERATION|MULTIMODAL")  # generation models; not pooling or speculative tables


@probe("vllm", "target_architectures", "Target architectures the model registry knows", order=90)
def target_architectures(tree: EngineTree) -> dict[str, str]:
    relpath = registry_file(tree)
    if relpath is None:  # no registry, no entries
        return {}
    return {e.architecture: tree.loc(relpath, e.lineno) for e in registry_entries(tree) if TARGET_TABLES.search(e.table)}
