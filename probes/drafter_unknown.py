"""What a drafter's `load_weights` loop does with a name no parameter has (`unknown_names`).

Every `params_dict[...]` lookup in the loop is classified as guarded (skipped, or warned and skipped)
or not (KeyError: "raise"), separately for the stacked branch and the others. None when the class has
no such loop (it hands the names to a base class or a loader class: drafter_loading asks those).
"""

from __future__ import annotations

import ast

from compat.probes.drafter_class import DrafterCode
from compat.probes.drafter_code import ModuleCode, Parents, load_function, nodes_of, parents_of
from compat.probes.drafter_steps import STACKED_HINTS, name_vars, weights_loop


WARN_CALLS = ("warning", "warn", "warning_once", "info")


# -- load_weights: names no parameter has ------------------------------------------------------

def unknown_names(d: DrafterCode, cls: ast.ClassDef, code: ModuleCode | None = None) -> dict | None:
    """How `cls.load_weights`'s own loop treats a name missing from params_dict (None: no such loop)."""
    code = code or d.code
    func = load_function(cls)
    if func is None:
        return None
    found = weights_loop(func)
    if found is None:
        return None
    loop, name = found
    names = name_vars(loop, name)
    parents = parents_of(func)
    dicts = {t.id for n in nodes_of(func) if isinstance(n, ast.Assign) and "named_parameters" in ast.unparse(n.value)
             for t in n.targets if isinstance(t, ast.Name)}
    verdicts: dict[str, list[tuple[str, ast.AST]]] = {"stacked": [], "other": []}
    for node in nodes_of(loop):
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) in dicts:
            key = node.slice
            if not (isinstance(key, ast.Name) and key.id in names):
                continue
            branch = "stacked" if _in_stacked_loop(node, parents, loop) else "other"
            verdicts[branch].append((_guard(node, key.id, dicts, parents, loop), node))
    if not any(verdicts.values()):
        return _collected(code, cls, loop, names, dicts)
    summary = {b: _worst([v for v, _ in vs]) for b, vs in verdicts.items() if vs}
    results = set(summary.values())
    result = results.pop() if len(results) == 1 else "mixed"
    first_node = next(n for vs in verdicts.values() for _, n in vs)
    out = {"result": result, **summary, "by": f"{cls.name}.load_weights", "location": code.loc(first_node)}
    return out


def _collected(code: ModuleCode, cls: ast.ClassDef, loop: ast.For, names: set[str], dicts: set[str]) -> dict | None:
    """A loop that only collects known names (`elif name in params_dict: weights_map[name] = w`, `param =
    params_dict.get(name)` then `if param is not None:`): any other name is dropped without a word."""
    for node in nodes_of(loop):
        key = None
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In):
            key = node.left if getattr(node.comparators[0], "id", None) in dicts else None
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and getattr(node.func.value, "id", None) in dicts and node.args):
            key = node.args[0]
        if isinstance(key, ast.Name) and key.id in names:
            return {"result": "skip", "other": "skip", "by": f"{cls.name}.load_weights", "location": code.loc(node)}
    return None


def _worst(verdicts: list[str]) -> str:
    for v in ("raise", "warn", "skip"):
        if v in verdicts:
            return v
    return "skip"


def _in_stacked_loop(node: ast.AST, parents: Parents, outer: ast.For) -> bool:
    child = node
    while child in parents and child is not outer:
        parent = parents[child]
        if isinstance(parent, ast.For) and child in parent.body and parent is not outer:
            if any(h in ast.unparse(parent.iter) for h in STACKED_HINTS):
                return True
        child = parent
    return False


def _membership(test: ast.AST, key: str, dicts: set[str]) -> str | None:
    """"in" / "not in" when `test` is exactly `key in params_dict` (or `.keys()`)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) and test.left.id == key:
        comp = test.comparators[0]
        if isinstance(comp, ast.Call) and isinstance(comp.func, ast.Attribute) and comp.func.attr == "keys":
            comp = comp.func.value
        if isinstance(comp, ast.Name) and comp.id in dicts:
            return "in" if isinstance(test.ops[0], ast.In) else "not in" if isinstance(test.ops[0], ast.NotIn) else None
    return None


def _warns(stmts: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Call) and getattr(n.func, "attr", None) in WARN_CALLS for s in stmts for n in ast.walk(s))


def _guard(node: ast.AST, key: str, dicts: set[str], parents: Parents, loop: ast.For) -> str:
    """"skip" / "warn" when the lookup cannot see a missing name, else "raise" (KeyError)."""
    child = node
    while child in parents and child is not loop:
        parent = parents[child]
        if isinstance(parent, ast.If):
            kind = _membership(parent.test, key, dicts)
            if kind == "in" and child in parent.body:
                return "warn" if _warns(parent.orelse) else "skip"
        if isinstance(parent, ast.IfExp) and _membership(parent.test, key, dicts) == "in" and child is parent.body:
            return "skip"
        body = _block_holding(parent, child)
        if body is not None:
            for stmt in body[:body.index(child)]:
                if isinstance(stmt, ast.If) and (_membership(stmt.test, key, dicts) == "not in" or _is_none(stmt.test, key)):
                    if any(isinstance(s, (ast.Continue, ast.Return, ast.Break)) for s in stmt.body):
                        return "warn" if _warns(stmt.body) else "skip"
        child = parent
    return "raise"


def _is_none(test: ast.AST, key: str) -> bool:
    """`key is None`: the name a resolver gave back is None (no parameter has it), tested before the lookup."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == key
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None)


def _block_holding(parent: ast.AST, child: ast.AST) -> list[ast.AST] | None:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and child in block:
            return block
    return None
