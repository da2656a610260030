"""LMDeploy's `SpeculativeConfig` (lmdeploy/messages.py, 0.11.0+): its fields, the checks its `__post_init__` makes,
and the functions of the Python API that take it.

A dataclass, not a JSON option: the CLI builds it from the `--speculative-*` flags (`get_speculative_config`,
lmdeploy/cli/utils.py), the Python API takes it beside the engine config (`pipeline(model,
backend_config=PytorchEngineConfig(...), speculative_config=SpeculativeConfig(...))`, lmdeploy/api.py). Fields:
method, model, num_speculative_tokens; dflash_block_size from 0.18.0, whose `__post_init__` refuses it for another
method or below 2 and sets num_speculative_tokens = dflash_block_size - 1.
"""

from __future__ import annotations

import ast

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes._ast import class_fields, field_name, find_class, literal, methods, safe_parse
from compat.probes.lmdeploy._source import raises

HOME = "lmdeploy/messages.py"
API = "lmdeploy/api.py"


@probe("lmdeploy", "speculative_config", "SpeculativeConfig (the Python API's speculative settings)", order=20)
def speculative_config(tree: EngineTree) -> dict:
    found = find_class(tree, "SpeculativeConfig", prefer=[HOME], under="lmdeploy")
    if found is None:
        return {"present": False, "reason": "no class SpeculativeConfig under lmdeploy"}
    relpath, cls = found
    fields = [{"name": field_name(stmt), "type": ast.unparse(stmt.annotation),
               "default": literal(stmt.value) if stmt.value is not None else None, "required": stmt.value is None,
               "location": tree.loc(relpath, stmt)} for stmt in class_fields(cls)]
    post_init = methods(cls).get("__post_init__")
    return {
        "present": True, "class": "SpeculativeConfig", "location": tree.loc(relpath, cls), "form": "dataclass",
        "fields": fields,
        "checks": [r.to_json(tree) for r in raises(relpath, post_init)] if post_init is not None else [],
        "taken_by": _taken_by(tree),
    }


def _taken_by(tree: EngineTree) -> list[dict]:
    """The Python API's functions with a `speculative_config` parameter (`pipeline`, `serve`)."""
    module = safe_parse(tree, API) if tree.exists(API) else None
    out = []
    for func in (n for n in module.body if isinstance(n, ast.FunctionDef)) if module else ():
        names = [a.arg for a in (*func.args.args, *func.args.kwonlyargs)]
        if "speculative_config" in names:
            out.append({"function": f"lmdeploy.{func.name}", "location": tree.loc(API, func)})
    return out
