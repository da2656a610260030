"""A release's start-up rule, kept by a probe as source text, evaluated on a launch line's values (shared by checks).

Three-valued: True, False, or UNKNOWN when the condition reads something the line does not settle (a value set
later at start-up, a function call, the GPU). Only literals, comparisons, `and`/`or`/`not`, arithmetic, the
settings (`self.x`, `cfg.x`, `server_args.x`, `resolved_view(server_args).x`: the setting x) and environment
switches (`envs.NAME.get()`) are read; anything else is UNKNOWN, never a guess.
"""

from __future__ import annotations

import ast
import operator
from typing import Any, Callable, Mapping

UNKNOWN: Any = type("Unknown", (), {"__repr__": lambda self: "UNKNOWN"})()
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_, ast.IsNot: operator.is_not,
}
_ARITH: dict[type, Callable[[Any, Any], Any]] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def evaluate(text: str, settings: Mapping[str, Any], env: Mapping[str, Any]) -> Any:
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return UNKNOWN
    return _eval(node, settings, env)


def _eval(node: ast.AST, settings: Mapping[str, Any], env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Name, ast.Attribute)) and ast.unparse(node) in settings:  # a setting named as written
        return settings[ast.unparse(node)]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_eval(e, settings, env) for e in node.elts]
        return UNKNOWN if any(i is UNKNOWN for i in items) else items
    if isinstance(node, ast.Attribute) and _is_settings(node.value):
        return settings.get(node.attr, UNKNOWN)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        inner = node.func.value
        if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == "envs":
            return env.get(inner.attr, UNKNOWN)
        return UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int" and len(node.args) == 1:
        value = _eval(node.args[0], settings, env)
        return value if value is UNKNOWN or not isinstance(value, (int, str)) else _int(value)
    if isinstance(node, ast.BoolOp):
        return _bool_op(node, settings, env)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = _eval(node.operand, settings, env)
        return UNKNOWN if value is UNKNOWN else not value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        left, right = _eval(node.left, settings, env), _eval(node.right, settings, env)
        if any(v is UNKNOWN or not isinstance(v, (int, float)) or isinstance(v, bool) for v in (left, right)):
            return UNKNOWN
        return _ARITH[type(node.op)](left, right)
    if isinstance(node, ast.Compare):
        return _compare(node, settings, env)
    return UNKNOWN


def _is_settings(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("self", "cfg", "server_args", "view", "args")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("resolved_view", "resolving_view")


def _int(value: Any) -> Any:
    try:
        return int(value)
    except (TypeError, ValueError):
        return UNKNOWN


def _bool_op(node: ast.BoolOp, settings: Mapping[str, Any], env: Mapping[str, Any]) -> Any:
    unknown = False
    for part in node.values:
        value = _eval(part, settings, env)
        if value is UNKNOWN:
            unknown = True
        elif isinstance(node.op, ast.And) and not value:
            return False
        elif isinstance(node.op, ast.Or) and value:
            return True
    return UNKNOWN if unknown else isinstance(node.op, ast.And)


def _compare(node: ast.Compare, settings: Mapping[str, Any], env: Mapping[str, Any]) -> Any:
    left = _eval(node.left, settings, env)
    for op, right_node in zip(node.ops, node.comparators):
        right = _eval(right_node, settings, env)
        if left is UNKNOWN or right is UNKNOWN or type(op) not in _COMPARE:
            return UNKNOWN
        try:
            result = _COMPARE[type(op)](left, right)
        except TypeError:  # None > 1: what Python would raise; the line does not settle it
            return UNKNOWN
        if not result:
            return False
        left = right
    return True


def holds(conditions: list[str], settings: Mapping[str, Any], env: Mapping[str, Any], last_negated: bool = False) -> Any:
    """Whether every condition holds (the last one negated for an assert: it refuses when its test is false)."""
    unknown = False
    for i, text in enumerate(conditions):
        value = evaluate(text, settings, env)
        if value is not UNKNOWN and last_negated and i == len(conditions) - 1:
            value = not value
        if value is UNKNOWN:
            unknown = True
        elif not value:
            return False
    return UNKNOWN if unknown else True


def fill(message: str | None, settings: Mapping[str, Any]) -> str:
    """A rule's message with its `{name}` placeholders (from an f-string) given the line's values."""
    import re

    def value(match: re.Match) -> str:
        key = match.group(1)
        return repr(settings[key]) if key in settings else match.group(0)

    return re.sub(r"\{([\w.]+)\}", value, message or "")
