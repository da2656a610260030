"""SGLang's registered EAGLE-3 drafter architectures.

A drafter's config.json `architectures[0]` must itself be a registered class (SGLang has
no EAGLE-3 architecture rewrite): `LlamaForCausalLMEagle3` (0.4.4.post2+) and the MLA
drafter `Eagle3DeepseekV2ForCausalLM` (0.5.12+, in kimi_k25_eagle3.py). Found as the names
in an `EntryClass` of `sglang/srt/models/` whose class or module name says Eagle3.
"""

from __future__ import annotations

from compat.probes import probe
from compat.probes.sglang._models import is_eagle3_drafter_name, models_index, module_name
from compat.core.tree import EngineTree


def drafter_classes(tree: EngineTree) -> list[dict]:
    index = models_index(tree)
    out = []
    for arch, (entry_file, entry_line) in sorted(index.registered.items()):
        header = index.find(arch, entry_file, tree)
        relpath = header.relpath if header else entry_file
        if not is_eagle3_drafter_name(arch, entry_file):
            continue
        out.append({
            "architecture": arch,
            "class": arch,
            "module": module_name(relpath),
            "location": tree.loc(relpath, header.line if header else None),
            "registered_at": tree.loc(entry_file, entry_line),
            "bases": header.bases if header else [],
        })
    return out


@probe("sglang", "eagle3_drafters", "EAGLE-3 drafter architectures (registered)", order=60)
def eagle3_drafters(tree: EngineTree) -> list[str]:
    return [d["architecture"] for d in drafter_classes(tree)]


@probe("sglang", "eagle3_drafter_classes", "EAGLE-3 drafter classes", order=61)
def eagle3_drafter_classes(tree: EngineTree) -> list[dict]:
    return drafter_classes(tree)
