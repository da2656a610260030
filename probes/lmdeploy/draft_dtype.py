"""Which dtype LMDeploy runs the draft in: the server's --dtype, resolved on the draft's own config.

The engine builds the draft's config with `SpecDecodeConfig.from_config(..., dtype=engine_config.dtype)` (the
server's `--dtype`: lmdeploy/pytorch/engine/engine.py in 0.11-0.13, engine/config_builder.py from 0.14), which reads
the draft checkpoint's config (`ModelConfig.from_pretrained(draft_model, dtype=dtype, ...)`) and resolves it in
`_update_torch_dtype` (lmdeploy/pytorch/config.py): `auto` keeps the draft's own `torch_dtype` when it is float16 or
bfloat16 (else float16; bfloat16 becomes float16 on a GPU without it), any other value is used as given. Unlike vLLM
and SGLang, `auto` never takes the target's dtype: the fact says so (`auto_from: "draft"`).
"""

from __future__ import annotations

import ast

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes._ast import safe_parse
from compat.probes.lmdeploy._source import call_name, keyword, string

PYTORCH = "lmdeploy/pytorch"


@probe("lmdeploy", "draft_dtype", "The draft model's dtype (--dtype; auto: the draft's own)", order=88)
def draft_dtype(tree: EngineTree) -> dict:
    call = _draft_config_call(tree)
    if call is None:
        return {"present": False, "reason": "no SpecDecodeConfig.from_config(..., dtype=...) call in lmdeploy/pytorch"}
    relpath, node, given = call
    out = {"present": True, "from_target": False, "given_by": given, "location": tree.loc(relpath, node),
           "auto_from": None, "auto_location": None}
    auto = _auto_branch(tree)
    if auto is not None:
        out["auto_from"], out["auto_location"] = "draft", tree.loc(*auto)
    return out


def _draft_config_call(tree: EngineTree) -> tuple[str, ast.Call, str] | None:
    """`SpecDecodeConfig.from_config(..., dtype=engine_config.dtype)`: where the engine hands the draft its dtype."""
    for relpath in tree.grep(b"SpecDecodeConfig.from_config", under=PYTORCH):
        module = safe_parse(tree, relpath)
        for node in ast.walk(module) if module else ():
            if isinstance(node, ast.Call) and call_name(node) == "from_config" and "SpecDecodeConfig" in ast.unparse(node.func):
                given = keyword(node, "dtype")
                if given is not None:
                    return relpath, node, ast.unparse(given)
    return None


def _auto_branch(tree: EngineTree) -> tuple[str, ast.AST] | None:
    """`if dtype == 'auto': torch_dtype = torch_dtype if torch_dtype in ['float16', 'bfloat16'] else 'float16'` in the
    function that resolves a ModelConfig's dtype from its own hf_config."""
    for relpath in tree.grep(b"def _update_torch_dtype", under=PYTORCH):
        module = safe_parse(tree, relpath)
        func = next((n for n in ast.walk(module) if isinstance(n, ast.FunctionDef) and n.name == "_update_torch_dtype"),
                    None) if module else None
        for node in ast.walk(func) if func else ():
            if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and string(node.test.comparators[0]) == "auto":
                if any(isinstance(n, ast.Assign) and "torch_dtype" in ast.unparse(n.targets[0]) for n in node.body):
                    return relpath, node
    return None
