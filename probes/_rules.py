"""Start-up rules read from an engine's source (a reader the rule probes share, not a probe): each `if` or `assert`
in a function whose test reads given settings, with the tests of the `if`s around it (an `elif` carries the
negation of the tests before it), what it does (refuse: raise/assert; adjust: it rewrites one of the settings),
its message and file:line. The conditions stay source text; checks/_rules.py evaluates them on a launch line.
"""

from __future__ import annotations

import ast

from compat.probes._ast import unparse
from compat.core.tree import EngineTree


def start_up_rules(tree: EngineTree, relpath: str, func: ast.FunctionDef, fields: tuple[str, ...]) -> list[dict]:
    """Every if/assert in func whose test reads one of `fields` (an attribute or a name), with the tests of the ifs
    around it: refuse (it raises or asserts) or adjust (it rewrites one of the fields), message, file:line."""
    out: list[dict] = []

    def visit(body: list[ast.stmt], around: list[str]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Assert) and _reads(stmt.test, fields):
                out.append(_rule("refuse", around + [unparse(stmt.test) or ""], _message(stmt.msg) or
                                 f"AssertionError: assert {unparse(stmt.test)}", tree.loc(relpath, stmt), negate=True))
            if isinstance(stmt, ast.If):
                test = unparse(stmt.test) or ""
                if _reads(stmt.test, fields):
                    kind, message = _outcome(stmt.body, fields)
                    if kind:
                        out.append(_rule(kind, around + [test], message, tree.loc(relpath, stmt)))
                visit(stmt.body, around + [test])
                visit(stmt.orelse, around + [f"not ({test})"])
            elif isinstance(stmt, (ast.For, ast.With, ast.Try)):
                visit(stmt.body, around)

    visit(func.body, [])
    return out


def _rule(kind: str, conditions: list[str], message: str | None, location: str, negate: bool = False) -> dict:
    rule: dict[str, object] = {"kind": kind, "when": conditions, "message": message, "location": location}
    if negate:
        rule["fails_unless_last"] = True  # an assert: it refuses when its own test is false
    return rule


def _reads(node: ast.AST, fields: tuple[str, ...]) -> bool:
    return any((isinstance(n, ast.Attribute) and n.attr in fields) or (isinstance(n, ast.Name) and n.id in fields)
               for n in ast.walk(node))


def _outcome(body: list[ast.stmt], fields: tuple[str, ...]) -> tuple[str | None, str | None]:
    """("refuse", message) when the block raises, ("adjust", warning) when it rewrites a draft-tree setting."""
    for stmt in body:
        if isinstance(stmt, ast.Raise):
            call = stmt.exc if isinstance(stmt.exc, ast.Call) else None
            text = _message(call.args[0]) if call is not None and call.args else None
            name = unparse(call.func) if call is not None else unparse(stmt.exc)
            return "refuse", f"{name}: {text}" if text else name
    sets = any(isinstance(n, (ast.Assign, ast.keyword)) and _assigns(n, fields) for s in body for n in ast.walk(s))
    if sets:
        warning = next((_message(n.args[0]) for s in body for n in ast.walk(s) if isinstance(n, ast.Call)
                        and unparse(n.func) in ("logger.warning", "logger.info", "warnings.warn") and n.args), None)
        return "adjust", warning
    return None, None


def _assigns(node: ast.AST, fields: tuple[str, ...]) -> bool:
    if isinstance(node, ast.keyword):
        return node.arg in fields
    return any((isinstance(t, ast.Attribute) and t.attr in fields) or (isinstance(t, ast.Name) and t.id in fields)
               for t in node.targets)  # type: ignore[attr-defined]


def _message(node: ast.AST | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant)
                       else "{" + (unparse(v.value) or "") + "}" if isinstance(v, ast.FormattedValue) else ""
                       for v in node.values)
    return unparse(node)
