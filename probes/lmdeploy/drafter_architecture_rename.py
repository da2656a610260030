"""How LMDeploy names the class an EAGLE draft checkpoint is built as: `spec_method.capitalize() +
architectures[0]`, only for the draft configs one config builder takes.

LlamaModelConfigBuilder (lmdeploy/pytorch/configurations/llama.py, 0.11.0+) takes a config whose
`architectures[0]` is `LlamaForCausalLM` and, for a draft, rewrites it to `Eagle3LlamaForCausalLM` (eagle3) or
`EagleLlamaForCausalLM` (eagle). A draft written with another architecture (`LlamaForCausalLMEagle3`, as ModelOpt
and some trainers write it) is taken by no builder, keeps its name, and `_get_model_class`
(lmdeploy/pytorch/models/patch.py) raises `RuntimeError: Can not found rewrite for architectures: [...]`.
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.lmdeploy._source import config_builders, module_map, registered_proposers, renamed


@probe("lmdeploy", "drafter_architecture_rename", "Draft architecture rename (spec_method + architecture)", order=61)
def drafter_architecture_rename(tree: EngineTree) -> dict:
    methods = [p.method for p in registered_proposers(tree)]
    mapped = module_map(tree)
    rules = []
    for builder in config_builders(tree):
        for expression, node in builder.renames:
            produces = {f"{method}:{base}": renamed(node.value, method, base) for method in methods for base in builder.architectures}
            rules.append({"builder": builder.name, "expression": expression, "location": tree.loc(builder.relpath, node),
                          "applies_to": builder.architectures, "condition": builder.condition,
                          "condition_location": tree.loc(builder.relpath, builder.condition_line),
                          "produces": {key: {"architecture": name, "in_module_map": name in mapped}
                                       for key, name in produces.items() if name}})
    if not rules:
        return {"present": False, "reason": "no config builder renames a draft's architecture after its method"}
    return {"present": True, "location": rules[0]["location"], "rules": rules,
            "otherwise": "a draft architecture no builder takes keeps its own name: the model map must hold it"}
