"""Every key a drafter module reads from its config: how (attribute, getattr, .get, `in`), the default, where.

The drafter_loader probes report it per class (`config_reads`); a key read only as `config.key`, with no
default and no guard, must be in the drafter's config.json (doctor's drafter-config check says so).
Nested dicts (`eagle_config = getattr(config, "eagle_config", {})`, then `eagle_config.get("k")`) are
reported under their key.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from compat.probes.drafter_code import Function, ModuleCode, is_self_attr, nodes_of, parents_of
from compat.probes.drafter_values import TOP, Matcher, config_object_names


def config_reads(code: ModuleCode) -> list[dict]:
    """Each (key, where) the module reads from the drafter config: how, the default, where first."""
    found: dict[tuple[str, str], dict] = {}
    top = [n for n in code.module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    top += [m for c in code.classes.values() for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for func in top:  # nested functions are read with the function that holds them
        for key, where, access, default, node in _reads_in(func):
            entry = found.setdefault((key, where), {"key": key, "where": where, "access": [], "default": None,
                                                    "written": False, "location": code.loc(node), "_line": node.lineno})
            if access == "write":
                entry["written"] = True
                continue
            if access not in entry["access"]:
                entry["access"].append(access)
            if default is not None and entry["default"] is None:
                entry["default"] = default
            if node.lineno < entry["_line"]:
                entry["location"], entry["_line"] = code.loc(node), node.lineno
    out = sorted(found.values(), key=lambda e: (e["where"] != TOP, e["_line"], e["key"]))
    for entry in out:
        del entry["_line"]
        entry["access"].sort()
    return out


def _reads_in(func: Function) -> Iterator[tuple[Any, str, str, Any, ast.expr]]:
    """(key, where, access, default, node) of each read (or write, access "write") of the config in `func`."""
    names = config_object_names(func)
    parents = parents_of(func)

    def is_cfg(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id in names) or is_self_attr(node, "config")

    containers: dict[str, str] = {}  # local name -> the config key it holds (eagle_config)
    for node in nodes_of(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            for sub in ast.walk(node.value):
                held = _top_key(sub, is_cfg)
                if held and node.targets[0].id not in names:
                    containers[node.targets[0].id] = held
                    break
    for node in nodes_of(func):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2):
            obj, key = node.args[0], node.args[1]
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            access = node.func.id
            default = _literal(node.args[2]) if len(node.args) > 2 else None
            if is_cfg(obj):
                yield key.value, TOP, access, default, node
            elif isinstance(obj, ast.Name) and obj.id in containers:
                yield key.value, containers[obj.id], access, default, node
        elif isinstance(node, ast.Attribute) and is_cfg(node.value) and not is_self_attr(node, "config"):
            parent = parents.get(node)
            if isinstance(parent, ast.Call) and parent.func is node:
                continue  # config.to_dict(), config.update(...)
            yield node.attr, TOP, "write" if isinstance(node.ctx, ast.Store) else "attribute", None, node
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            holder = node.func.value
            if isinstance(holder, ast.Name) and holder.id in containers and node.args and isinstance(node.args[0], ast.Constant):
                default = _literal(node.args[1]) if len(node.args) > 1 else None
                yield node.args[0].value, containers[holder.id], "get", default, node
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in containers:
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                yield node.slice.value, containers[node.value.id], "item", None, node
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            comp = node.comparators[0]
            if isinstance(comp, ast.Name) and comp.id in containers and isinstance(node.left, ast.Constant):
                yield node.left.value, containers[comp.id], "in", None, node


def _top_key(node: ast.AST, is_cfg: Matcher) -> str | None:
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and len(node.args) >= 2:
        if is_cfg(node.args[0]) and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            return node.args[1].value
    if isinstance(node, ast.Attribute) and is_cfg(node.value) and not is_self_attr(node, "config"):
        return node.attr
    return None


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node)
