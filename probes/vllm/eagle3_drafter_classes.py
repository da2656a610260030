"""Which class each registered EAGLE-3 drafter architecture loads, and where it is defined."""

from __future__ import annotations

from compat.probes import probe
from compat.probes._ast import class_headers
from compat.probes.vllm._common import registry_file, registry_module_file
from compat.probes.vllm.eagle3_drafters import eagle3_entries
from compat.core.tree import EngineTree


@probe("vllm", "eagle3_drafter_classes", "EAGLE-3 drafter classes", order=61)
def eagle3_drafter_classes(tree: EngineTree) -> list[dict]:
    registry = registry_file(tree)
    if registry is None:  # no registry, no entries
        return []
    out = []
    for entry in eagle3_entries(tree):
        module_path = registry_module_file(tree, entry.module)
        header = None
        if module_path is not None:
            header = next((h for h in class_headers(tree, module_path) if h.name == entry.cls), None)
        out.append({
            "architecture": entry.architecture,
            "module": entry.module,
            "class": entry.cls,
            "registered": tree.loc(registry, entry.lineno),
            # The class may be a module-level alias (Eagle3DeepseekV3ForCausalLM = ...) or missing.
            "location": tree.loc(module_path, header.lineno) if header and module_path else module_path,
        })
    return out
