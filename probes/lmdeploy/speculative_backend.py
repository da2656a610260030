"""Which of LMDeploy's two engines serves a speculative launch: `--backend` defaults to turbomind, which drops the
speculative settings with a warning.

`lmdeploy serve api_server` takes `--backend {pytorch,turbomind}` (default `turbomind`: ArgumentHelper.backend,
lmdeploy/cli/utils.py); unless it is `pytorch`, the server picks TurboMind for any model TurboMind supports
(`if backend != 'pytorch': backend = autoget_backend(...)`, cli/serve.py), and the async engine only warns
`speculative decoding is not supported by turbomind` (lmdeploy/serve/async_engine.py:332 in 0.11.0,
serve/core/async_engine.py:149 in 0.18.0) before serving without a drafter. Only the PyTorch engine speculates:
upstream's own example adds `--backend pytorch` (InternLM/lmdeploy#3945).
"""

from __future__ import annotations

import ast

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes._ast import safe_parse
from compat.probes.lmdeploy._source import CLI, call_name, keyword, string, strings

_WARNING = b"not supported by turbomind"


@probe("lmdeploy", "speculative_backend", "Speculative backend (--backend default, TurboMind drops the drafter)", order=35)
def speculative_backend(tree: EngineTree) -> dict:
    drops = _drops(tree)
    if drops is None:
        return {"present": False, "reason": "no speculative decoding in this release (no TurboMind warning for it)"}
    return {"present": True, "speculates": "pytorch", "flag": _backend_flag(tree), "auto": _auto(tree), "drops": drops}


def _backend_flag(tree: EngineTree) -> dict | None:
    for relpath in tree.grep(b"'--backend'", under=CLI) + tree.grep(b'"--backend"', under=CLI):
        module = safe_parse(tree, relpath)
        for call in (n for n in ast.walk(module) if isinstance(n, ast.Call)) if module else ():
            if call_name(call) == "add_argument" and call.args and string(call.args[0]) == "--backend":
                default = keyword(call, "default")
                return {"name": "--backend", "default": string(default), "choices": strings(keyword(call, "choices")),
                        "location": tree.loc(relpath, call)}
    return None


def _auto(tree: EngineTree) -> dict | None:
    """`if backend != 'pytorch': backend = autoget_backend(...)` in the api_server command."""
    for relpath in tree.grep(b"autoget_backend", under=CLI):
        module = safe_parse(tree, relpath)
        for func in (n for n in ast.walk(module) if isinstance(n, ast.FunctionDef) and n.name == "api_server") if module else ():
            for node in (n for n in ast.walk(func) if isinstance(n, ast.If)):
                if any(isinstance(c, ast.Call) and call_name(c) == "autoget_backend" for s in node.body for c in ast.walk(s)):
                    return {"when": ast.unparse(node.test), "location": tree.loc(relpath, node)}
    return None


def _drops(tree: EngineTree) -> dict | None:
    """`if speculative_config is not None and backend == 'turbomind': logger.warning(...)`: a warning, no error."""
    for relpath in tree.grep(_WARNING, under="lmdeploy/serve"):
        module = safe_parse(tree, relpath)
        for node in (n for n in ast.walk(module) if isinstance(n, ast.If)) if module else ():
            if "speculative_config" in ast.unparse(node.test) and any(_WARNING.decode() in s for s in strings(node)):
                call = next(c for c in ast.walk(node) if isinstance(c, ast.Call) and c.args and _WARNING.decode() in (string(c.args[0]) or ""))
                return {"when": ast.unparse(node.test), "message": string(call.args[0]), "how": f"logger.{call_name(call)}",
                        "raises": any(isinstance(s, ast.Raise) for s in node.body), "location": tree.loc(relpath, node)}
    return None
