"""The builtins a guard calls, computed on known values (`len`, `any`/`all` over a comprehension, `getattr` with a
default, `hasattr`, `isinstance` of builtin types, conversions, `min`/`max`, `range`): a mixin of the Evaluator
(expressions.py), which gives `value`, `truth` and `_comprehension`. What they cannot compute is `Unknown`.
"""

from __future__ import annotations

import ast
from typing import Any

from compat.guards.values import Obj, OneOf, Unknown, first_unknown

MAX_ITEMS = 4096
_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "tuple": tuple, "dict": dict,
          "set": set, "type(None)": type(None)}


class Builtins:
    """`_builtin_NAME(node, args, kwargs, scope)` for each builtin a guard may call."""

    def value(self, node: ast.AST, scope: dict[str, Any] | None = None) -> Any:  # pragma: no cover - Evaluator's
        raise NotImplementedError

    def truth(self, node: ast.AST, scope: dict[str, Any] | None = None) -> Any:  # pragma: no cover - Evaluator's
        raise NotImplementedError

    def _comprehension(self, node, scope, element) -> Any:  # pragma: no cover - Evaluator's
        raise NotImplementedError

    def _builtin_len(self, node, args, kwargs, scope):
        value = args[0] if len(args) == 1 else Unknown(ast.unparse(node))
        return len(value) if isinstance(value, (list, tuple, dict, str)) else Unknown(ast.unparse(node))

    def _builtin_any(self, node, args, kwargs, scope):
        return self._any_all(node, scope, any)

    def _builtin_all(self, node, args, kwargs, scope):
        return self._any_all(node, scope, all)

    def _any_all(self, node, scope, how):
        if len(node.args) != 1:
            return Unknown(ast.unparse(node))
        arg = node.args[0]
        if isinstance(arg, (ast.GeneratorExp, ast.ListComp)):
            truths = self._comprehension(arg, scope, lambda inner: self.truth(arg.elt, inner))
        else:
            items = self.value(arg, scope)
            truths = [truthy(i) for i in items] if isinstance(items, (list, tuple, str, dict)) else Unknown(ast.unparse(arg))
        if isinstance(truths, Unknown):
            return truths
        decisive = how is any
        if any(t is decisive for t in truths if not isinstance(t, Unknown)):
            return decisive
        return _unknown_of(truths, node) or (not decisive)

    def _builtin_getattr(self, node, args, kwargs, scope):
        if len(args) not in (2, 3) or not isinstance(args[1], str):
            return Unknown(ast.unparse(node))
        owner = args[0]
        if isinstance(owner, Obj):
            return owner.get(args[1], args[2], with_default=True) if len(args) == 3 else owner.get(args[1])
        if owner is None and len(args) == 3:
            return args[2]
        return Unknown(ast.unparse(node))

    def _builtin_hasattr(self, node, args, kwargs, scope):
        if len(args) != 2 or not isinstance(args[1], str):
            return Unknown(ast.unparse(node))
        if isinstance(args[0], Obj):
            has = args[0].has(args[1])
            return Unknown(ast.unparse(node)) if has is None else has
        if args[0] is None:
            return False
        return Unknown(ast.unparse(node))

    def _builtin_isinstance(self, node, args, kwargs, scope):
        if len(args) != 2 or isinstance(args[0], (Unknown, Obj)):
            return Unknown(ast.unparse(node))
        kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
        types = [_TYPES.get(ast.unparse(k)) for k in kinds]
        if any(t is None for t in types):
            return Unknown(ast.unparse(node))
        return isinstance(args[0], tuple(t for t in types if t is not None))

    def _convert(self, node, args, kwargs, kind):
        if len(args) != 1 or kwargs or isinstance(args[0], (Unknown, Obj)):
            return Unknown(ast.unparse(node))
        try:
            return kind(args[0])
        except Exception:  # int("x"): Python would raise, no guard's answer
            return Unknown(ast.unparse(node))

    def _builtin_int(self, node, args, kwargs, scope):
        return self._convert(node, args, kwargs, int)

    def _builtin_float(self, node, args, kwargs, scope):
        return self._convert(node, args, kwargs, float)

    def _builtin_str(self, node, args, kwargs, scope):
        return self._convert(node, args, kwargs, str)

    def _builtin_bool(self, node, args, kwargs, scope):
        return truthy(args[0]) if len(args) == 1 else Unknown(ast.unparse(node))

    def _builtin_list(self, node, args, kwargs, scope):
        if not args:
            return []
        return self._convert(node, args, kwargs, list)

    def _builtin_tuple(self, node, args, kwargs, scope):
        if not args:
            return ()
        return self._convert(node, args, kwargs, tuple)

    def _builtin_sorted(self, node, args, kwargs, scope):
        if kwargs:
            return Unknown(ast.unparse(node))
        return self._convert(node, args, kwargs, sorted)

    def _builtin_abs(self, node, args, kwargs, scope):
        return self._convert(node, args, kwargs, abs)

    def _min_max(self, node, args, kwargs, how):
        if kwargs or not args:
            return Unknown(ast.unparse(node))
        items = args[0] if len(args) == 1 else args
        if not isinstance(items, (list, tuple)) or not items or first_unknown(items) or any(isinstance(i, Obj) for i in items):
            return Unknown(ast.unparse(node))
        try:
            return how(items)
        except TypeError:
            return Unknown(ast.unparse(node))

    def _builtin_min(self, node, args, kwargs, scope):
        return self._min_max(node, args, kwargs, min)

    def _builtin_max(self, node, args, kwargs, scope):
        return self._min_max(node, args, kwargs, max)

    def _builtin_range(self, node, args, kwargs, scope):
        if kwargs or not 1 <= len(args) <= 3 or not all(isinstance(a, int) for a in args):
            return Unknown(ast.unparse(node))
        items = range(*args)
        return list(items) if len(items) <= MAX_ITEMS else Unknown(ast.unparse(node))




def truthy(value: Any) -> Any:
    """bool(value), or Unknown (an object of the release's is true: it is not None)."""
    if isinstance(value, OneOf):
        truths = {bool(v) for v in value.values}
        return truths.pop() if len(truths) == 1 else Unknown(value.why)
    if isinstance(value, Unknown):
        return value
    if isinstance(value, Obj):
        return True
    try:
        return bool(value)
    except Exception:
        return Unknown("")


def _unknown_of(values: Any, node: ast.AST) -> Unknown | None:
    found = first_unknown(values)
    return None if found is None else Unknown(found.why or ast.unparse(node))
