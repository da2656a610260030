"""vLLM's `/server_info` endpoint: whether the release has it, the environment variable that turns it on,
and whether it answers the configuration as JSON (`?config_format=json`) or only as text.

`compat verify --server` reads the speculative method and draft model from it; without it a vLLM server
tells neither (its /metrics gives the number of speculative tokens, by the per-position counters).

    {"present": true, "path": "/server_info", "location": "file:line", "config_key": "vllm_config",
     "json_format": true, "enabled_by": "VLLM_SERVER_DEV_MODE", "enabled_by_location": "file:line"}
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.core.tree import EngineTree

PATH = "/server_info"
UNDER = "vllm/entrypoints"


@probe("vllm", "server_info_endpoint", "The /server_info endpoint (speculative settings of a running server)", order=82)
def server_info_endpoint(tree: EngineTree) -> dict:
    for relpath in tree.grep(f'"{PATH}"'.encode(), under=UNDER):
        module = tree.parse(relpath)
        for node in ast.walk(module):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _routes(node, PATH):
                return {"present": True, "path": PATH, "location": tree.loc(relpath, node),
                        "config_key": _config_key(node), "json_format": _takes(node, "config_format"),
                        **_gate(tree, relpath, module, node)}
    return {"present": False, "reason": f"no route {PATH} under {UNDER}/"}


def _routes(func: ast.FunctionDef | ast.AsyncFunctionDef, path: str) -> bool:
    return any(isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "get"
               and d.args and isinstance(d.args[0], ast.Constant) and d.args[0].value == path
               for d in func.decorator_list)


def _takes(func: ast.FunctionDef | ast.AsyncFunctionDef, arg: str) -> bool:
    return any(a.arg == arg for a in func.args.args + func.args.kwonlyargs)


def _config_key(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    for node in ast.walk(func):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            found = [k for k in keys if "config" in k]
            if found:
                return found[0]
    return None


def _gate(tree: EngineTree, relpath: str, module: ast.Module, func: ast.AST) -> dict:
    """The `if envs.VLLM_SERVER_DEV_MODE` that decides whether the route exists: in the route's module (0.10:
    around the route; 0.15-0.2x: `if not ...: return` in its attach_router), else around the call of the
    function that imports the route's module (0.3x: `register_vllm_dev_api_routers`)."""
    found = _env_if(module)
    if found is not None:
        return {"enabled_by": _env_name(found.test), "enabled_by_location": tree.loc(relpath, found)}
    package = relpath.rsplit("/", 1)[0]
    stem = relpath.removesuffix(".py").rsplit("/", 1)[-1]
    for init in (f"{package}/__init__.py", f"{package.rsplit('/', 1)[0]}/__init__.py"):  # `from .server_info import router`
        for node in ast.walk(tree.parse(init)) if tree.exists(init) else ():
            if isinstance(node, ast.If) and _env_name(node.test) and f".{stem} import" in ast.unparse(node):
                return {"enabled_by": _env_name(node.test), "enabled_by_location": tree.loc(init, node)}
    dotted = ".".join(relpath.removesuffix(".py").split("/")[-2:])
    for importer in tree.grep(dotted.encode(), under=UNDER):
        for outer in ast.walk(tree.parse(importer)):
            if not isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)) or dotted not in ast.unparse(outer):
                continue
            for caller in tree.grep(f"{outer.name}(".encode(), under=UNDER):
                for node in ast.walk(tree.parse(caller)):
                    if isinstance(node, ast.If) and _env_name(node.test) and f"{outer.name}(" in ast.unparse(node):
                        return {"enabled_by": _env_name(node.test), "enabled_by_location": tree.loc(caller, node)}
    return {"enabled_by": None, "enabled_by_location": None}


def _env_if(module: ast.Module) -> ast.If | None:
    return next((n for n in ast.walk(module) if isinstance(n, ast.If) and _env_name(n.test)), None)


def _env_name(test: ast.expr) -> str | None:
    for node in ast.walk(test):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        if name and name.startswith("VLLM_") and "DEV" in name:
            return name
    return None
