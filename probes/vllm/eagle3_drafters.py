"""Registered EAGLE-3 drafter architecture names (`_SPECULATIVE_DECODING_MODELS`).

A drafter checkpoint's `architectures[0]` (after EAGLEConfig rewrites it, research §5.1) must
be one of these names. An entry is EAGLE-3 when its module or class says so (`llama_eagle3`,
`Eagle3LlamaForCausalLM`); aliases such as `LlamaForCausalLMEagle3` or `PEagleDraftModel`
count because they map to an EAGLE-3 class.
"""

from __future__ import annotations

from compat.probes import probe
from compat.probes.vllm._common import RegistryEntry, registry_entries
from compat.core.tree import EngineTree


def is_eagle3(entry: RegistryEntry) -> bool:
    return "eagle3" in entry.module.rsplit(".", 1)[-1].lower() or "eagle3" in entry.cls.lower()


def eagle3_entries(tree: EngineTree) -> list[RegistryEntry]:
    return [e for e in registry_entries(tree) if "SPECULATIVE" in e.table and is_eagle3(e)]


@probe("vllm", "eagle3_drafters", "Registered EAGLE-3 drafter architectures", order=60)
def eagle3_drafters(tree: EngineTree) -> list[str]:
    return list(dict.fromkeys(e.architecture for e in eagle3_entries(tree)))
