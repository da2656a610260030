"""The draft model classes an LMDeploy release builds, and which draft checkpoints load into each.

A draft checkpoint is built like a model: its config goes through the config builder whose `condition` takes it
(lmdeploy/pytorch/configurations/*.py), and the builder, told `is_draft_model=True`, names the class to build by
rewriting `architectures[0]`: a fixed name for the MTP drafts (`'DeepseekMTPModel'`, `'Qwen3_5MTPModel'`, ...), or
`spec_method.capitalize() + architectures[0]` for a Llama-architecture EAGLE draft (`Eagle3LlamaForCausalLM`). The name
is then looked up in MODULE_MAP (lmdeploy/pytorch/models/module_map.py); a draft architecture no builder takes keeps
its own name, which the map must hold (`Eagle3DeepseekV2ForCausalLM`, the Kimi-K2.5 MLA drafter, 0.17.0+; `DFlashDraftModel`, 0.18.0).
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.lmdeploy._source import (class_location, config_builders, module_map, reads_draft_inputs,
                                            registered_proposers, renamed)


@probe("lmdeploy", "draft_models", "Draft model classes (the architecture each draft checkpoint is built as)", order=60)
def draft_models(tree: EngineTree) -> list[dict]:
    mapped = module_map(tree)
    methods = [p.method for p in registered_proposers(tree)]
    if not methods:
        return []
    out: dict[str, dict] = {}

    def add(arch: str, how: str, where: str, builder, for_methods: list[str] | None) -> None:
        entry = mapped.get(arch)
        row = out.setdefault(arch, {"architecture": arch, "class": entry.cls if entry else None,
                                    "module": entry.target.rsplit(".", 1)[0] if entry else None,
                                    "location": class_location(tree, entry) if entry else None,
                                    "map_location": tree.loc(entry.relpath, entry.line) if entry else None,
                                    "in_module_map": entry is not None, "built_from": []})
        row["built_from"].append({"how": how, "builder": builder.name if builder else None, "location": where,
                                  "draft_architectures": builder.architectures if builder else [arch],
                                  "draft_model_types": builder.model_types if builder else [],
                                  "methods": for_methods})  # None: the builder admits any method

    for builder in config_builders(tree):
        admitted = [m for names, _ in builder.methods for m in names if m in methods] or None  # None: it checks none
        for arch, node in builder.draft_architectures:
            add(arch, "set by the builder", tree.loc(builder.relpath, node), builder, admitted)
        for arch, node in builder.required_draft:
            add(arch, "the draft's own architecture, required by the builder", tree.loc(builder.relpath, node), builder, admitted)
        for _, node in builder.renames:
            for base in builder.architectures:
                for method in methods:
                    name = renamed(node.value, method, base)
                    if name and name in mapped:
                        add(name, f"renamed from {base}", tree.loc(builder.relpath, node), builder, [method])
    drafting: dict[str, bool] = {}
    for arch, entry in mapped.items():  # a draft class no builder names: built under its own architecture
        if arch in out:
            continue
        if entry.module_relpath not in drafting:
            drafting[entry.module_relpath] = reads_draft_inputs(tree, entry.module_relpath)
        if drafting[entry.module_relpath]:
            add(arch, "the draft's own architecture (no builder renames it)", tree.loc(entry.relpath, entry.line), None, None)
    return sorted(out.values(), key=lambda r: r["architecture"])
