"""What a raise or assert checks: the condition guarding it, read from the code, with the literal values of the
names it compares (the list of model types a whitelist holds), each with its file and line.

    guard_fact(test, raises_when, ...) -> {"test": "...", "raises_when": true, "line": N, "names": {...}}
    hole_exprs(message) -> ["self.method", ...] | None

A raise's guard is the innermost `if` around it in its function (its `else:` branch: the test must be false); an
assert's is its own test (it raises when the test is false). A name is given its value when its last assignment
before the guard (in the function, else at module level) is a literal (`ast.literal_eval`): what `compat explain`
says the engine compared, and evaluates the user's value against in each release.
"""

from __future__ import annotations

import ast

from compat.core.tree import EngineTree

MAX_ITEMS = 400  # a literal with more items is not kept (it says nothing a reader can take in)
MAX_TEST = 400  # characters of a condition kept


def guard_fact(tree: EngineTree, relpath: str, test: ast.expr, raises_when: bool, function: ast.AST | None,
               module: ast.Module | None) -> dict:
    names: dict[str, dict] = {}
    bound = {n.id for c in ast.walk(test) if isinstance(c, ast.comprehension) for n in ast.walk(c.target)
             if isinstance(n, ast.Name)}
    for node in ast.walk(test):
        if isinstance(node, ast.Name) and node.id not in bound and node.id not in names:
            found = _literal(node.id, test.lineno, function, module)
            if found is not None:
                value, where = found
                names[node.id] = {"value": value, "at": tree.loc(relpath, where)}
    text = ast.unparse(test)
    return {"test": text[:MAX_TEST], "raises_when": raises_when, "line": test.lineno, "names": names}


def hole_exprs(message: ast.AST | None) -> list[str] | None:
    """The expressions of an f-string message's holes, in order (None when the message is not one f-string)."""
    if not isinstance(message, ast.JoinedStr):
        return None
    return [ast.unparse(v.value) for v in message.values if isinstance(v, ast.FormattedValue)]


def _literal(name: str, before: int, function: ast.AST | None, module: ast.Module | None) -> tuple[object, ast.AST] | None:
    for scope in (function, module):
        if scope is None:
            continue
        candidates = _assignments(scope).get(name, ())
        best = None
        for node in candidates:
            if (scope is module or node.lineno < before) and (best is None or node.lineno > best.lineno):
                best = node
        if best is not None:
            return _value(best)
    return None


def _value(best: ast.Assign | ast.AnnAssign) -> tuple[object, ast.AST] | None:
    try:
        value = ast.literal_eval(best.value) if best.value is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    value = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
    if isinstance(value, (tuple, dict)):
        value = list(value)  # a dict compared with `in` is its keys
    if isinstance(value, list) and len(value) > MAX_ITEMS:
        return None
    if not isinstance(value, (list, str, int, float, bool, type(None))):
        return None
    return value, best


_SCOPES: dict[int, tuple[ast.AST, dict[str, list]]] = {}


def _assignments(scope: ast.AST) -> dict[str, list]:
    """name -> its assignments in `scope` (a function: anywhere in it; a module: its top level), read once."""
    entry = _SCOPES.get(id(scope))
    if entry is not None and entry[0] is scope:
        return entry[1]
    found: dict[str, list] = {}
    nodes = iter(getattr(scope, "body", [])) if isinstance(scope, ast.Module) else ast.walk(scope)
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node)
    if len(_SCOPES) > 4096:
        _SCOPES.clear()
    _SCOPES[id(scope)] = (scope, found)
    return found
