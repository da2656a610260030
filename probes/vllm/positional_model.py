"""Where a positional model on the launch line is served: `vllm serve MODEL` copies its positional (`model_tag`) into
the model to serve (`args.model = args.model_tag`, entrypoints/cli/serve.py); `python -m
vllm.entrypoints.openai.api_server` parses the same positional (make_arg_parser adds it) but its `__main__` never copies
it, so it serves the default model (ModelConfig.model, "Qwen/Qwen3-0.6B" in 0.10.0 - 0.34.0) with no error. The images of 0.10.0 - 0.11.0 start the module (their docker/Dockerfile's ENTRYPOINT), so a manifest
whose args start with the model serves another model there.

    {"present": true, "serve_copies": "vllm/entrypoints/cli/serve.py:40", "module": "vllm/entrypoints/openai/api_server.py",
     "module_copies": null, "module_location": "...api_server.py:2000", "default_model": "Qwen/Qwen3-0.6B",
     "default_location": "vllm/config/__init__.py:279"}
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes.vllm._common import find_class_def, imported_from, module_file
from compat.core.tree import EngineTree

MODULE = "vllm/entrypoints/openai/api_server.py"


@probe("vllm", "positional_model", "A positional model: vllm serve takes it, the api_server module ignores it", order=83)
def positional_model(tree: EngineTree) -> dict:
    copies = [(relpath, node) for relpath in tree.grep(b"model_tag", under="vllm/entrypoints")
              for node in _copies(tree.parse(relpath))]
    serve = next((tree.loc(r, n) for r, n in copies if r.endswith("cli/serve.py")), None)
    out: dict = {"present": serve is not None or tree.exists(MODULE), "serve_copies": serve,
                 "module": MODULE if tree.exists(MODULE) else None, "module_copies": None, "module_location": None}
    if tree.exists(MODULE):
        main, reached = _main_block(tree)
        out["module_location"] = tree.loc(MODULE, main) if main is not None else None
        out["module_copies"] = next((tree.loc(r, n) for r, n in copies if r in reached), None)
    out.update(_default_model(tree))
    return out


def _copies(module: ast.Module) -> list[ast.Assign]:
    """`args.model = args.model_tag`."""
    return [n for n in ast.walk(module) if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Attribute)
            and n.targets[0].attr == "model" and "model_tag" in ast.unparse(n.value)]


def _main_block(tree: EngineTree) -> tuple[ast.If | None, set[str]]:
    """The module's `if __name__ == "__main__":` and the files it runs: itself and the module of a `main` it imports
    there (0.32: `from vllm.entrypoints.launchers.api_server.entry import main`)."""
    module = tree.parse(MODULE)
    main = next((n for n in module.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)), None)
    reached = {MODULE}
    for node in ast.walk(main) if main is not None else []:
        if isinstance(node, ast.ImportFrom) and node.module:
            found = module_file(tree, node.module)
            if found:
                reached.add(found)
    if main is not None:
        for name in (n.func.id for n in ast.walk(main) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)):
            origin = imported_from(tree, MODULE, module, name)
            found = module_file(tree, origin[0]) if origin else None
            if found:
                reached.add(found)
    return main, reached


def _default_model(tree: EngineTree) -> dict:
    """ModelConfig's `model: str = "..."`: what is served when no model reaches the engine."""
    found = find_class_def(tree, "ModelConfig", prefer=("vllm/config/model.py", "vllm/config/__init__.py", "vllm/config.py"))
    if found is None:
        return {"default_model": None, "default_location": None}
    relpath, cls = found
    for stmt in cls.body:
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "model"
                and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)):
            return {"default_model": stmt.value.value, "default_location": tree.loc(relpath, stmt)}
    return {"default_model": None, "default_location": None}
