"""A guard's expression evaluated against values, never with `eval`: what `compat explain` reads a raise's condition
with, and what the statement reader (statements.py) computes every expression of the release's validation with.

Read: literals, names and attributes whose values are known, `in`/`not in`/`==`/`!=`/`is`/order comparisons,
`and`/`or`/`not` (three-valued: a part that is unknown makes the whole unknown only where it could decide it),
arithmetic, `x if c else y`, f-strings, subscripts, comprehensions over known lists, and the pure builtins and
methods of str/list/dict (`len`, `any`, `getattr`, `x.lower()`, ...). What it cannot know is `Unknown`, with the
expression it comes from. Names, attribute reads of the release's objects and calls of the release's functions
are the caller's (`Evaluator.name`, `Evaluator.call_function`): explain gives the values of a message's holes,
the statement reader its frame and the functions it follows.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from compat.guards.builtins import Builtins, truthy
from compat.guards.values import Obj, OneOf, PythonRaises, Unknown, first_unknown, join, one_of

MAX_ITEMS = 4096  # a comprehension over more items than this is not unrolled
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b, ast.Eq: operator.eq, ast.NotEq: operator.ne,
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}
_ARITH: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_SINGLETONS = (None, True, False, Ellipsis)
# methods of Python values that compute without side effects (what a guard calls on a string, a list, a dict)
_PURE: dict[type, set[str]] = {str: {"lower", "upper", "strip", "lstrip", "rstrip", "startswith", "endswith", "split", "rsplit", "replace",
               "isidentifier", "isdigit", "isalpha", "count", "find", "partition", "rpartition", "join", "casefold",
               "removeprefix", "removesuffix", "title", "capitalize"},
         list: {"index", "count", "copy"}, tuple: {"index", "count"},
         dict: {"get", "keys", "values", "items", "copy"}}
# methods that change a known dict or list in place (the walk's values are copied where paths split)
_MUTATING: dict[type, set[str]] = {dict: {"update", "setdefault", "pop"}, list: {"append", "extend", "insert", "pop", "remove"}}

@lru_cache(maxsize=8192)
def parse(text: str) -> ast.expr:
    """An expression's tree, parsed once per text."""
    return ast.parse(text, mode="eval").body


def _unknown_of(values: Any, node: ast.AST) -> Unknown | None:
    found = first_unknown(values)
    return None if found is None else Unknown(found.why or ast.unparse(node))


class Evaluator(Builtins):
    """Evaluates expressions; subclasses give names (`name`) and the release's calls (`call_function`)."""

    def __init__(self, known: dict[str, Any] | None = None, *, and_as_raised: bool = False, strict: bool = False) -> None:
        self.known = known or {}  # expression text -> value (explain: the values of a message's holes)
        # explain: a guard's `and` whose other parts hold is taken as true where a part is unknown (the engine raised)
        self.and_as_raised = and_as_raised
        # what Python raises on known values (`None > 1`) is raised (PythonRaises), not unknown: the walk's refusal
        self.strict = strict

    # -- what subclasses give ---------------------------------------------------------------------------------
    def name(self, name: str, node: ast.Name) -> Any:
        return Unknown(name)

    def call_function(self, node: ast.Call, func: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """A call that is not a builtin's or a pure method's: the caller's to follow (default: unknown)."""
        return Unknown(f"{ast.unparse(node.func)}(...)")

    def bind(self, name: str, value: Any) -> None:
        """`(name := value)` inside an expression (the statement reader binds it in its frame)."""

    # -- values -------------------------------------------------------------------------------------------
    def value(self, node: ast.AST, scope: dict[str, Any] | None = None) -> Any:
        if self.known:
            text = ast.unparse(node)
            if scope and text in scope:
                return scope[text]
            if text in self.known:
                return self.known[text]
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            return Unknown(ast.unparse(node))
        return method(node, scope or {})

    def truth(self, node: ast.AST, scope: dict[str, Any] | None = None) -> Any:
        """True, False or Unknown: the test of an `if`, `and`/`or`/`not` read three-valued."""
        scope = scope or {}
        if isinstance(node, ast.BoolOp):
            if self.and_as_raised:
                return self._explain_bool(node, scope)
            decisive = isinstance(node.op, ast.Or)  # `or` is decided by a true part, `and` by a false one
            parts: list[Any] = []
            for part in node.values:  # left to right, as Python: a part after the deciding one is never evaluated
                try:
                    got = self.truth(part, scope)
                except PythonRaises:
                    if any(isinstance(p, Unknown) for p in parts):
                        got = Unknown(ast.unparse(part))  # reached only if the unknown part does not decide
                    else:
                        raise
                if got is decisive:
                    return decisive
                parts.append(got)
            return _unknown_of(parts, node) or (not decisive)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.truth(node.operand, scope)
            return inner if isinstance(inner, Unknown) else not inner
        return truthy(self.value(node, scope))

    def _explain_bool(self, node: ast.BoolOp, scope: dict[str, Any]) -> Any:
        values = [self.truth(v, {**scope}) for v in node.values]
        known = [v for v in values if not isinstance(v, Unknown)]
        if isinstance(node.op, ast.And):
            return False if any(not v for v in known) else True  # an unknown part is as it was when the engine raised
        if any(known):
            return True
        return _unknown_of(values, node) or False

    def _Constant(self, node, scope):
        return node.value

    def _List(self, node, scope):
        items = [self.value(e, scope) for e in node.elts]
        return _unknown_of(items, node) or (items if isinstance(node, ast.List) else tuple(items))

    _Tuple = _List

    def _Set(self, node, scope):
        items = self._List(node, scope)
        return items if isinstance(items, Unknown) else list(items)

    def _Dict(self, node, scope):
        out: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values):
            if key is None:  # {**other}
                inner = self.value(value, scope)
                if not isinstance(inner, dict):
                    return Unknown(ast.unparse(node))
                out.update(inner)
                continue
            k = self.value(key, scope)
            if isinstance(k, (Unknown, Obj, list, dict)):
                return Unknown(ast.unparse(node))
            out[k] = self.value(value, scope)
        return out

    def _Name(self, node, scope):
        if node.id in scope:
            return scope[node.id]
        return self.name(node.id, node)

    def _Attribute(self, node, scope):
        owner = self.value(node.value, scope)
        if isinstance(owner, Unknown):
            return Unknown(ast.unparse(node))
        if isinstance(owner, Obj):
            return owner.get(node.attr)
        return Unknown(ast.unparse(node))

    def _Subscript(self, node, scope):
        owner = self.value(node.value, scope)
        if isinstance(node.slice, ast.Slice):
            return Unknown(ast.unparse(node))
        key = self.value(node.slice, scope)
        if isinstance(owner, Unknown) or isinstance(key, Unknown):
            return Unknown(ast.unparse(node))
        try:
            return owner[key] if isinstance(owner, (list, tuple, dict, str)) else Unknown(ast.unparse(node))
        except (IndexError, KeyError, TypeError):
            return Unknown(ast.unparse(node))  # Python would raise here: not a guard's answer

    def _UnaryOp(self, node, scope):
        if isinstance(node.op, ast.Not):
            return self.truth(node, scope)
        operand = self.value(node.operand, scope)
        if isinstance(operand, (int, float)) and not isinstance(operand, bool):
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
        return Unknown(ast.unparse(node))

    def _BoolOp(self, node, scope):
        """Python's `a or b` is a value (the first truthy part), not only a truth."""
        decisive = isinstance(node.op, ast.Or)
        for part in node.values:
            value = self.value(part, scope)
            truth = truthy(value)
            if isinstance(truth, Unknown):
                if self.and_as_raised:
                    return self.truth(node, scope)
                return Unknown(ast.unparse(node))
            if truth is decisive:
                return value
            last = value
        return last

    def _Compare(self, node, scope):
        left = self.value(node.left, scope)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.value(right_node, scope)
            if isinstance(left, OneOf) or isinstance(right, OneOf):
                result = over_one_of(functools.partial(compare, op), left, right)
            else:
                result = compare(op, left, right, strict=self.strict)
            if isinstance(result, Unknown):
                return Unknown(ast.unparse(node))
            if not result:
                return False
            left = right
        return True

    def _BinOp(self, node, scope):
        left, right = self.value(node.left, scope), self.value(node.right, scope)
        if (isinstance(left, OneOf) or isinstance(right, OneOf)) and type(node.op) in _ARITH:
            return over_one_of(lambda a, b: _ARITH[type(node.op)](a, b), left, right, ast.unparse(node))
        if isinstance(left, (Unknown, Obj)) or isinstance(right, (Unknown, Obj)) or type(node.op) not in _ARITH:
            return Unknown(ast.unparse(node))
        try:
            return _ARITH[type(node.op)](left, right)
        except Exception as exc:  # what Python raises (None + 1, 1 / 0): the release's refusal there, when strict
            if self.strict and _plain(left) and _plain(right):
                raise PythonRaises(type(exc).__name__, str(exc)) from None
            return Unknown(ast.unparse(node))

    def _IfExp(self, node, scope):
        test = self.truth(node.test, scope)
        if isinstance(test, Unknown):
            return join(self.value(node.body, scope), self.value(node.orelse, scope), ast.unparse(node))
        return self.value(node.body if test else node.orelse, scope)

    def _JoinedStr(self, node, scope):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
                continue
            inner = self.value(value.value, scope) if isinstance(value, ast.FormattedValue) else Unknown("")
            if isinstance(inner, (Unknown, Obj)):
                return Unknown(ast.unparse(node))
            parts.append(repr(inner) if value.conversion == ord("r") else str(inner))
        return "".join(parts)

    def _NamedExpr(self, node, scope):
        value = self.value(node.value, scope)
        if isinstance(node.target, ast.Name):
            self.bind(node.target.id, value)
        return value

    # -- comprehensions -----------------------------------------------------------------------------------
    def _comprehension(self, node, scope, element: Callable[[dict[str, Any]], Any]) -> Any:
        results: list[Any] = []

        def walk(index: int, inner: dict[str, Any]) -> Unknown | None:
            if index == len(node.generators):
                results.append(element(inner))
                return None
            loop = node.generators[index]
            items = self.value(loop.iter, inner)
            if isinstance(items, dict):
                items = list(items)
            if not isinstance(items, (list, tuple, str)) or len(items) > MAX_ITEMS:
                return Unknown(ast.unparse(loop.iter))
            for item in items:
                bound = _bind_target(loop.target, item, dict(inner))
                if bound is None:
                    return Unknown(ast.unparse(loop.target))
                tests = [self.truth(cond, bound) for cond in loop.ifs]
                if any(isinstance(t, Unknown) for t in tests):
                    return Unknown(ast.unparse(node))
                if all(tests):
                    stop = walk(index + 1, bound)
                    if stop is not None:
                        return stop
            return None

        stop = walk(0, dict(scope))
        return stop if stop is not None else results

    def _ListComp(self, node, scope):
        out = self._comprehension(node, scope, lambda inner: self.value(node.elt, inner))
        return out if isinstance(out, Unknown) else (_unknown_of(out, node) or out)

    _GeneratorExp = _SetComp = _ListComp

    def _DictComp(self, node, scope):
        out = self._comprehension(node, scope, lambda inner: (self.value(node.key, inner), self.value(node.value, inner)))
        if isinstance(out, Unknown):
            return out
        if any(isinstance(k, (Unknown, Obj, list, dict)) for k, _ in out):
            return Unknown(ast.unparse(node))
        return dict(out)

    # -- calls --------------------------------------------------------------------------------------------
    def _Call(self, node, scope):
        args: list[Any] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                spread = self.value(arg.value, scope)
                if not isinstance(spread, (list, tuple)):
                    return Unknown(ast.unparse(node))
                args.extend(spread)
            else:
                args.append(self.value(arg, scope) if not _is_any_all(node) else arg)
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            value = self.value(keyword.value, scope)
            if keyword.arg is None:
                if not isinstance(value, dict):
                    return Unknown(ast.unparse(node))
                kwargs.update(value)
            else:
                kwargs[keyword.arg] = value
        func = node.func
        if isinstance(func, ast.Name) and func.id not in scope:
            builtin = getattr(self, "_builtin_" + func.id, None)
            if builtin is not None and self._is_builtin(func.id):
                return builtin(node, args, kwargs, scope)
        if isinstance(func, ast.Attribute):
            owner = self.value(func.value, scope)
            pure = _PURE.get(type(owner))
            if pure is not None and func.attr in pure:
                if first_unknown(args) or first_unknown(kwargs.values()):
                    return Unknown(ast.unparse(node))
                try:
                    result = getattr(owner, func.attr)(*args, **kwargs)
                except Exception:  # what Python would raise is no guard's answer
                    return Unknown(ast.unparse(node))
                return list(result) if isinstance(result, (type({}.keys()), type({}.values()), type({}.items()))) \
                    else result
            mutating = _MUTATING.get(type(owner))
            if mutating is not None and func.attr in mutating:
                try:
                    return getattr(owner, func.attr)(*args, **kwargs)
                except Exception:  # what Python would raise is no guard's answer
                    return Unknown(ast.unparse(node))
            if isinstance(owner, Obj) and func.attr == "to_dict" and not args:
                return owner.to_dict()
            return self.call_function(node, owner, args, kwargs)
        return self.call_function(node, None, args, kwargs)

    def _is_builtin(self, name: str) -> bool:
        """A builtin's name that the code did not rebind (the statement reader says when it did)."""
        return True

def _is_any_all(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id in ("any", "all")


def _bind_target(target: ast.AST, item: Any, scope: dict[str, Any]) -> dict[str, Any] | None:
    if isinstance(target, ast.Name):
        scope[target.id] = item
        return scope
    if isinstance(target, (ast.Tuple, ast.List)):
        if isinstance(item, Unknown):
            for element in target.elts:
                if _bind_target(element, Unknown(ast.unparse(element)), scope) is None:
                    return None
            return scope
        if not isinstance(item, (list, tuple)) or len(item) != len(target.elts):
            return None
        for element, value in zip(target.elts, item):
            if _bind_target(element, value, scope) is None:
                return None
        return scope
    return None


bind_target = _bind_target


def over_one_of(fn: Callable[[Any, Any], Any], left: Any, right: Any, why: str = "") -> Any:
    """fn over every pair of the values left and right may be: their common answer, a few, or unknown."""
    lefts = left.values if isinstance(left, OneOf) else (left,)
    rights = right.values if isinstance(right, OneOf) else (right,)
    if any(isinstance(v, Unknown) for v in (*lefts, *rights)):
        return Unknown(why)
    results = []
    for a in lefts:
        for b in rights:
            try:
                results.append(fn(a, b))
            except Exception:  # one of them would make Python raise: not settled
                return Unknown(why)
    return one_of(results, why)


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def compare(op: ast.cmpop, left: Any, right: Any, *, strict: bool = False) -> Any:
    if isinstance(left, Unknown) or isinstance(right, Unknown):
        return Unknown("")
    if isinstance(op, (ast.Is, ast.IsNot)):
        if left in _SINGLETONS or right in _SINGLETONS or isinstance(left, Obj) or isinstance(right, Obj):
            result = left is right if not isinstance(left, bool) and not isinstance(right, bool) else \
                (type(left) is type(right) and left == right)
            return result if isinstance(op, ast.Is) else not result
        return Unknown("")
    if isinstance(op, (ast.In, ast.NotIn)):
        if isinstance(right, (list, tuple)) and first_unknown(right):
            return Unknown("")
        if isinstance(left, Obj) or (isinstance(right, Obj)):
            return Unknown("")
    elif isinstance(left, Obj) or isinstance(right, Obj):
        if isinstance(op, (ast.Eq, ast.NotEq)) and (left is None or right is None):
            return isinstance(op, ast.NotEq)
        return Unknown("")
    try:
        return _COMPARE[type(op)](left, right)
    except Exception as exc:  # None > 1: what Python raises there (strict), else not settled by the values
        if strict and _plain(left) and _plain(right):
            raise PythonRaises(type(exc).__name__, str(exc)) from None
        return Unknown("")
