"""Whether an engine's model loader refuses a model whose parameters were not all loaded (shared by the engines'
`weights_check` probes).

vLLM's DefaultModelLoader compares the names a model's `load_weights` returns with every parameter the model has and
raises on the difference ("Following weights were not initialized from checkpoint: {...}"), but only when the model
is not quantized and `load_weights` returned the names (`model_config.quantization is None and loaded_weights is not
None`). Found by shape: a set difference whose left side holds the `named_parameters()` names, then a `raise` when it
is not empty; the guard is the condition text that reads `quantization`.

    {"present": true, "location": "file:line" (the raise), "message": "...", "condition": "...",
     "only_unquantized": true, "needs_returned_names": true}
"""

from __future__ import annotations

import ast

from compat.core.tree import EngineTree, UnparseableFile
from compat.probes.drafter_complete import raise_message


def weights_check(tree: EngineTree, under: str) -> dict:
    files = tree.grep(b"named_parameters", under=under)
    default = tree.grep(b"class DefaultModelLoader", under=under)  # the loader of plain checkpoints first
    for relpath in [f for f in files if f in default] + [f for f in files if f not in default]:
        try:
            module = tree.parse(relpath)
        except UnparseableFile:
            continue
        found = _strict(module)
        if found is not None:
            raised, guard = found
            message = raise_message(raised)
            condition = _condition(module)
            return {"present": True, "location": tree.loc(relpath, raised), "message": message,
                    "condition": condition, "only_unquantized": "quantization is None" in (condition or ""),
                    "needs_returned_names": "is not None" in (condition or "") or guard}
    return {"present": False, "reason": f"no check of the loaded parameters under {under}"}


def _strict(module: ast.Module) -> tuple[ast.Raise, bool] | None:
    """The raise after `missing = <parameter names> - <loaded names>` (and whether it tests the names were returned)."""
    for func in (n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        params = {t.id for n in ast.walk(func) if isinstance(n, ast.Assign) and "named_parameters" in ast.unparse(n.value)
                  for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(func):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Sub)
                    and isinstance(node.value.left, ast.Name) and node.value.left.id in params):
                missing = {t.id for t in node.targets if isinstance(t, ast.Name)}
                for sub in ast.walk(func):
                    if (isinstance(sub, ast.If) and any(isinstance(n, ast.Name) and n.id in missing for n in ast.walk(sub.test))
                            and any(isinstance(s, ast.Raise) for s in sub.body)):
                        raised = next(s for s in sub.body if isinstance(s, ast.Raise))
                        return raised, "is not None" in ast.unparse(func)
    return None


def _condition(module: ast.Module) -> str | None:
    """The test that turns the check on: the first condition or assignment that reads `quantization is None`."""
    for node in ast.walk(module):
        if isinstance(node, (ast.If, ast.Assign)):
            text = ast.unparse(node.test if isinstance(node, ast.If) else node.value)
            if "quantization is None" in text:
                return text
    return None
