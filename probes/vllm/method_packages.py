"""The packages each vLLM speculative method needs beyond vLLM's own dependencies (probes/method_packages.py).

Read two ways, both from the release: the `has_x()` checks of vllm/utils called in a method's branch of the config
(vllm/config) that raise when the package is missing (suffix decoding up to 0.33.0: `has_arctic_inference()`, with
the install line it prints), and what the method's proposer module (the class the model runner builds for it)
imports inside its functions or guards with an ImportError that raises.

    {"present": true, "methods": {"suffix": [{"module": "arctic_inference", "distribution": "arctic-inference",
                                              "requires": "==0.1.1", "install", "how", "message", "location", ...}]}}
"""

from __future__ import annotations

import ast

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes._ast import class_fields, field_name
from compat.probes.drafter_code import ModuleCode
from compat.probes.method_packages import checked_packages, module_requirements
from compat.probes.vllm import _method_runners as runners
from compat.probes.vllm._common import literal_strings, speculative_config_class


@probe("vllm", "method_packages", "Packages a method needs beyond vLLM's own dependencies", order=90)
def method_packages(tree: EngineTree) -> dict:
    found = speculative_config_class(tree)
    field = next((f for f in class_fields(found[1]) if field_name(f) == "method"), None) if found else None
    if found is None or field is None:
        return {"present": False, "reason": "no SpeculativeConfig.method in vllm/config"}
    names = literal_strings(tree, found[0], field.annotation)
    per = checked_packages(tree, "vllm/utils", "vllm/config", names)
    chain, chain_at = runners.runner_chain(tree, names)
    runner = chain_at.rsplit(":", 1)[0] if chain_at else None
    for branch in chain:
        relpath = _proposer_module(tree, runner, branch.get("proposer")) if runner else None
        for req in module_requirements(tree, relpath) if relpath else []:
            for name in branch["methods"]:
                known = per.setdefault(name, [])
                same = next((k for k in known if k["module"] == req["module"]), None)
                if same is None:
                    known.append(req)
                else:
                    same.setdefault("also", []).append({"how": req["how"], "location": req["location"]})
    return {"present": True, "location": tree.loc(found[0], field), "methods": per}


def _proposer_module(tree: EngineTree, runner: str, proposer: str | None) -> str | None:
    """The file of the proposer class the model runner imports."""
    if not proposer:
        return None
    origin = ModuleCode(tree, runner).imported(proposer)
    if origin is None:
        return None
    relpath = origin[0].replace(".", "/") + ".py"
    return relpath if tree.exists(relpath) and isinstance(tree.parse(relpath), ast.Module) else None
