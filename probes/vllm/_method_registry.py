"""Method auto-detection as a registry of speculator configs (vLLM 0.34.0+), read into the same shape
as the `if/elif` chain of earlier releases (see method_autodetection.py).

From 0.34.0 `SpeculativeConfig.__post_init__` no longer guesses the method from the draft path. A
loop in the speculator-config module does: when no method is configured, the draft checkpoint's own
declaration wins (a speculators-format config), else each method of a detection-order tuple is tried
by its config class's `matches(spec)` (`"eagle3" in spec.draft_model_config.model.lower()`), else the
method-None default (`draft_model`). Found by shape, wherever it lives:

    for method in ORDER:                                   # ORDER: a tuple of method names
        config_cls = resolve_obj_by_qualname(BY_METHOD[method])   # BY_METHOD: {"eagle3": "...Class"}
        if config_cls.matches(spec_config): return config_cls
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from compat.probes.vllm._common import find_class_def, resolve_name
from compat.core.tree import EngineTree

TestReader = Callable[[EngineTree, str, ast.AST], dict]


def read_detection_registry(tree: EngineTree, read_test: TestReader) -> dict | None:
    """{"function", "location", "explicit_methods", "branches", "otherwise", "declared"} or None when
    the release has no such loop. `read_test` turns a `matches` return expression into a test."""
    for relpath in tree.grep(b".matches(", under="vllm"):
        found = _detection_loop(tree.parse(relpath))
        if found is None:
            continue
        func, loop, order_name, table_name = found
        order = _assigned(tree, relpath, order_name)
        table = _assigned(tree, relpath, table_name)
        if not isinstance(order, (ast.Tuple, ast.List)) or not isinstance(table, ast.Dict):
            continue
        classes = _classes_by_method(table)
        return {"function": func.name, "location": tree.loc(relpath, loop),
                "explicit_methods": sorted(classes),
                "branches": [_branch(tree, m, classes.get(m), read_test) for m in _strings(order)],
                "otherwise": {"sets": _none_default(tree.parse(relpath)), "raises": None,
                              "location": tree.loc(relpath, func.body[-1])},
                "declared": _declared_first(tree, relpath, func)}
    return None


def _detection_loop(module: ast.Module) -> tuple[ast.FunctionDef, ast.For, str, str] | None:
    for func in (n for n in module.body if isinstance(n, ast.FunctionDef)):
        for loop in (n for n in ast.walk(func) if isinstance(n, ast.For)):
            if not (isinstance(loop.iter, ast.Name) and isinstance(loop.target, ast.Name)):
                continue
            calls_matches = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "matches"
                                for n in ast.walk(loop))
            table = next((n.value.id for n in ast.walk(loop) if isinstance(n, ast.Subscript)
                          and isinstance(n.value, ast.Name) and isinstance(n.slice, ast.Name)
                          and n.slice.id == loop.target.id), None)
            if calls_matches and table:
                return func, loop, loop.iter.id, table
    return None


def _assigned(tree: EngineTree, relpath: str, name: str) -> ast.AST | None:
    found = resolve_name(tree, relpath, name)
    return found[1].value if found else None


def _strings(node: ast.Tuple | ast.List) -> list[str]:
    return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def _classes_by_method(table: ast.Dict) -> dict[str, str]:
    """{"eagle3": "Eagle3SpeculatorConfig"}: the last dotted part of the qualified name, whether written
    as one string or built by a helper call (`_builtin("eagle.config", "Eagle3SpeculatorConfig")`)."""
    out = {}
    for key, value in zip(table.keys, table.values):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            continue
        strings = [n.value for n in ast.walk(value) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        if strings:
            out[key.value] = strings[-1].rsplit(".", 1)[-1]
    return out


def _branch(tree: EngineTree, method: str, class_name: str | None, read_test: TestReader) -> dict:
    found = _matches_return(tree, class_name) if class_name else None
    if found is None:
        return {"when": {"other": f"{class_name}.matches"}, "sets": method, "raises": None, "location": None}
    relpath, node = found
    assert node.value is not None  # _matches_return keeps only returns with a value
    return {"when": read_test(tree, relpath, node.value), "sets": method, "raises": None,
            "location": tree.loc(relpath, node)}


def _matches_return(tree: EngineTree, class_name: str, depth: int = 0) -> tuple[str, ast.Return] | None:
    """The `return` of the class's `matches`, following its first base class when it inherits it."""
    found = find_class_def(tree, class_name) if depth < 4 else None
    if found is None:
        return None
    relpath, cls = found
    for func in (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "matches"):
        returns = [n for n in ast.walk(func) if isinstance(n, ast.Return) and n.value is not None]
        return (relpath, returns[0]) if len(returns) == 1 else None
    base = cls.bases[0] if cls.bases else None
    return _matches_return(tree, base.id, depth + 1) if isinstance(base, ast.Name) else None


def _none_default(module: ast.Module) -> str | None:
    """`if method is None: method = "draft_model"`: what an unconfigured method falls back to."""
    for node in ast.walk(module):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("method is None"):
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                    return stmt.value.value
    return None


def _declared_first(tree: EngineTree, relpath: str, func: ast.FunctionDef) -> str | None:
    """Where the draft checkpoint's own declaration (a speculators config) is taken before any path test."""
    for node in ast.walk(func):
        if isinstance(node, ast.If) and "declared" in ast.unparse(node.test) and "is not None" in ast.unparse(node.test):
            return tree.loc(relpath, node)
    return None
