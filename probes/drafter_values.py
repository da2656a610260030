"""What a drafter module computes from its config, read symbolically (no engine import).

EAGLE-3 drafter classes of both engines are torch modules whose `__init__` derives sizes and
switches from the drafter's `config.json`: `fc` input width, layer count, optional norms.
This module follows those derivations through the code as written, whatever the variable
names: assignments (also `if x is None: x = ...` fallbacks and `if hasattr(...)` branches),
`getattr(config, "k", default)`, `a or b`, `len(ids) if ids else 3`, nested dicts read as
`eagle_config.get("k")`, and small module-level helpers (`_get_eagle_aux_layer_count(config)`).

A value is a small tuple tree:
  ("const", v)            a literal
  ("cfg", key, where)     the drafter config's key; where = "top-level" or the nested dict's key
  ("len", value)          len() of a value
  ("first", (v, ...))     the first alternative that is present (a fallback chain)
  ("mul", (v, ...))       a product
  ("none",)               None / an empty container (what a fallback replaces)
  ("unknown", text)       anything else, as written
`sources(value)` turns a fallback chain into the JSON the probes report:
  [{"key": k, "where": w, "use": "value"|"len"}, ..., {"default": 3}]
(the first entry whose key the drafter config has wins; a trailing default applies otherwise).

The module itself is read through drafter_code.ModuleCode; every config key a module reads, with
its default and location, is drafter_config_reads.config_reads.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, overload

from compat.probes.drafter_code import Function, ModuleCode, is_self_attr, methods, nodes_of

Value = tuple[Any, ...]  # a value tree: ("const", v), ("cfg", key, where), ("first", (...)), ... (see above)
Matcher = Callable[[ast.AST], bool]  # which assignment targets are the variable followed


TOP = "top-level"
CONFIG_NAMES = {"config", "hf_config", "draft_config", "draft_hf_config"}
_CFG_OBJ: Value = ("cfgobj",)  # the config object itself (not a value)
_MAX_DEPTH = 12


# -- the value algebra -------------------------------------------------------------------------

def const(v: object) -> Value:
    return ("none",) if v is None else ("const", v)


def first(*vals: Value | None) -> Value | None:
    out: list = []
    for v in vals:
        if v is None:
            continue
        for item in (v[1] if v[0] == "first" else (v,)):
            if item not in out:
                out.append(item)
    # nothing after an alternative that is always there (a literal) can ever apply
    cut = next((i for i, v in enumerate(out) if v[0] == "const"), None)
    if cut is not None:
        out = out[:cut + 1]
    return out[0] if len(out) == 1 else ("first", tuple(out)) if out else None


def strip_none(v: Value | None) -> Value | None:
    """The value with its None/empty fallbacks removed (a guard like `if x is None:` replaces them)."""
    if v is None:
        return None
    if v[0] == "first":
        return first(*(strip_none(x) for x in v[1] if x[0] != "none"))
    if v[0] == "len":
        inner = strip_none(v[1])
        return ("len", inner) if inner is not None else None
    return None if v[0] == "none" else v


@overload
def normalize(v: Value) -> Value: ...
@overload
def normalize(v: None) -> None: ...
@overload
def normalize(v: Value | None) -> Value | None: ...
def normalize(v: Value | None) -> Value | None:
    if v is None or v[0] in ("const", "cfg", "none", "unknown", "cfgobj"):
        return v
    if v[0] == "len":
        inner = normalize(strip_none(v[1]))
        if inner is not None and inner[0] == "first":
            return first(*(("len", x) for x in inner[1]))
        return ("len", inner) if inner is not None else ("unknown", "len(None)")
    if v[0] == "first":
        items = [normalize(x) for x in v[1]]
        factored = _factor(items)
        return factored if factored is not None else first(*items)
    if v[0] == "mul":
        factors: list = []
        for x in (normalize(x) for x in v[1]):
            factors.extend(x[1] if x[0] == "mul" else (x,))
        return ("mul", tuple(factors))
    return v


def _factor(items: list[Value]) -> Value | None:
    """first[a*c, b*c] -> first[a, b]*c (the `if hasattr(target_hidden_size)` shape)."""
    if len(items) < 2 or not all(x[0] == "mul" and len(x[1]) == 2 for x in items):
        return None
    for common in items[0][1]:
        if all(common in x[1] for x in items):
            rest = [next(f for f in x[1] if f != common) for x in items]
            return ("mul", (first(*rest), common))
    return None


def leaves(v: Value | None) -> list[Value]:
    v = normalize(v)
    if v is None:
        return []
    return list(v[1]) if v[0] == "first" else [v]


def source(leaf: Value) -> dict[str, Any]:
    kind = leaf[0]
    if kind == "cfg":
        return {"key": leaf[1], "where": leaf[2], "use": "value"}
    if kind == "len" and leaf[1][0] == "cfg":
        return {"key": leaf[1][1], "where": leaf[1][2], "use": "len"}
    if kind == "const":
        return {"default": leaf[1]}
    if kind == "none":
        return {"default": None}
    return {"unknown": leaf[1] if kind == "unknown" else repr(leaf)}


def sources(v: Value | None) -> list[dict[str, Any]]:
    return [source(x) for x in leaves(v)]


def config_keys(v: Value | None) -> list[tuple[str, str]]:
    """(key, where) of every config read inside a value."""
    out: list = []

    def visit(x: Value | None) -> None:
        if x is None:
            return
        if x[0] == "cfg":
            if (x[1], x[2]) not in out:
                out.append((x[1], x[2]))
        elif x[0] in ("first", "mul"):
            for y in x[1]:
                visit(y)
        elif x[0] == "len":
            visit(x[1])

    visit(v)
    return out


# -- resolving a value at a place in the code --------------------------------------------------

@dataclass
class Scope:
    """Where an expression is evaluated: a function of `code`, inside class `cls` (for self.x)."""

    code: ModuleCode
    func: Function
    cls: ast.ClassDef | None = None
    bindings: dict[str, Value | None] = field(default_factory=dict)  # helper parameters bound at the call site
    depth: int = 0

    def child(self, func: Function, cls: ast.ClassDef | None = None,
              bindings: dict[str, Value | None] | None = None) -> Scope:
        return Scope(self.code, func, cls, bindings or {}, self.depth + 1)


def config_object_names(func: Function) -> set[str]:
    """Local names that hold the drafter config: `config`, `hf_config`, and what is assigned from one."""
    cached = getattr(func, "_compat_config_names", None)
    if cached is not None:
        return cached
    names = set(CONFIG_NAMES) & {a.arg for a in func.args.args + func.args.kwonlyargs} | {"config"}
    for node in _assigns(func):
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and _is_config_expr(node.value, names):
            names.add(node.targets[0].id)
    setattr(func, "_compat_config_names", names)
    return names


def _assigns(func: Function) -> list[ast.Assign]:
    cached = getattr(func, "_compat_assigns", None)
    if cached is None:
        cached = [n for n in nodes_of(func) if isinstance(n, ast.Assign)]
        setattr(func, "_compat_assigns", cached)
    return cached


def _is_config_expr(node: ast.AST, names: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr == "hf_config" or is_self_attr(node, "config")
    if isinstance(node, ast.BoolOp):
        return any(_is_config_expr(v, names) for v in node.values)
    if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("copy", "deepcopy") and node.args:
        return _is_config_expr(node.args[0], names)
    return False


def resolve(expr: ast.AST | None, scope: Scope, line: int | None = None) -> Value | None:
    """The value of `expr`, evaluated just before `line` (default: the expression's own line)."""
    if expr is None:
        return None
    line = line or int(getattr(expr, "lineno", 10 ** 9))
    if scope.depth > _MAX_DEPTH:
        return ("unknown", ast.unparse(expr))
    if isinstance(expr, ast.Constant):
        return const(expr.value) if not isinstance(expr.value, str) else ("const", expr.value)
    if isinstance(expr, (ast.Dict, ast.List, ast.Tuple)) and not getattr(expr, "keys", getattr(expr, "elts", None)):
        return ("none",)  # `or {}`: an empty container is what a missing dict becomes
    if isinstance(expr, ast.Name):
        if expr.id in scope.bindings:
            return scope.bindings[expr.id]
        if expr.id in config_object_names(scope.func):
            return _CFG_OBJ
        if expr.id in scope.code.assigns and not _assigned_in(scope.func, expr.id):
            return resolve(scope.code.assigns[expr.id], scope.child(scope.func, scope.cls), 10 ** 9)
        return variable(scope, lambda t: isinstance(t, ast.Name) and t.id == expr.id, line)
    if isinstance(expr, ast.Attribute):
        if is_self_attr(expr, "config"):
            return _CFG_OBJ
        if is_self_attr(expr):
            return self_attribute(scope, expr.attr, line)
        holder = resolve(expr.value, scope, line)
        return _read(holder, expr.attr) or ("unknown", ast.unparse(expr))
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        return ("mul", (resolve(expr.left, scope, line), resolve(expr.right, scope, line)))
    if isinstance(expr, ast.BoolOp) and isinstance(expr.op, ast.Or):  # a falsy value moves on: None is no answer
        values = [resolve(v, scope, line) for v in expr.values]
        return first(*(strip_none(v) for v in values[:-1]), values[-1])
    if isinstance(expr, ast.IfExp):
        guarded = _guarded_name(expr.test)
        body, orelse = resolve(expr.body, scope, line), resolve(expr.orelse, scope, line)
        if guarded and guarded[1] == "present":  # `len(ids) if ids else 3`
            return first(strip_none(body), orelse)
        if guarded and guarded[1] == "missing":  # `3 if ids is None else len(ids)`
            return first(strip_none(orelse), body)
        return first(body, orelse)
    if isinstance(expr, ast.Call):
        return _call(expr, scope, line)
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        return _read(resolve(expr.value, scope, line), expr.slice.value) or ("unknown", ast.unparse(expr))
    return ("unknown", ast.unparse(expr))


def _read(holder: Value | None, key: Any) -> Value | None:
    """`holder.key` / `holder["key"]` / `holder.get("key")`: a config key, top-level or nested."""
    if holder == _CFG_OBJ:
        return ("cfg", key, TOP)
    for leaf in leaves(holder) if holder is not None and holder[0] in ("first", "cfg") else []:
        if leaf[0] == "cfg" and leaf[2] == TOP:
            return ("cfg", key, leaf[1])
    return None


def _call(expr: ast.Call, scope: Scope, line: int) -> Value | None:
    func = expr.func
    name = func.id if isinstance(func, ast.Name) else None
    if name == "getattr" and len(expr.args) >= 2 and isinstance(expr.args[1], ast.Constant):
        read = _read(resolve(expr.args[0], scope, line), expr.args[1].value)
        if read is None:
            return ("unknown", ast.unparse(expr))
        return first(read, resolve(expr.args[2], scope, line)) if len(expr.args) > 2 else read
    if name == "len" and expr.args:
        return ("len", resolve(expr.args[0], scope, line))
    if name in ("bool", "int", "list", "tuple") and expr.args:
        return resolve(expr.args[0], scope, line)
    if isinstance(func, ast.Attribute) and func.attr == "get" and expr.args and isinstance(expr.args[0], ast.Constant):
        read = _read(resolve(func.value, scope, line), expr.args[0].value)
        if read is not None:
            return first(read, resolve(expr.args[1], scope, line) if len(expr.args) > 1 else ("none",))
    if name and name in scope.code.functions and scope.depth < _MAX_DEPTH:
        helper = scope.code.functions[name]
        params = [a.arg for a in helper.args.args]
        bound = {p: resolve(a, scope, line) for p, a in zip(params, expr.args)}
        bound.update({k.arg: resolve(k.value, scope, line) for k in expr.keywords if k.arg})
        return returned(scope.child(helper, None, bound))
    return ("unknown", ast.unparse(expr))


def _assigned_in(func: Function, name: str) -> bool:
    return any(isinstance(t, ast.Name) and t.id == name for n in _assigns(func) for t in n.targets)


def _guarded_name(test: ast.AST) -> tuple[str, str] | None:
    """`x is None` / `not x` -> (x, "missing"); `x` / `x is not None` -> (x, "present")."""
    negate = False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negate = test.operand, True
    target: ast.AST | None = None
    state = "present"
    if isinstance(test, (ast.Name, ast.Attribute)):
        target, state = test, "present"
    elif (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant)
          and test.comparators[0].value is None and isinstance(test.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq))):
        target, state = test.left, "missing" if isinstance(test.ops[0], (ast.Is, ast.Eq)) else "present"
    if target is None:
        return None
    if negate:
        state = "present" if state == "missing" else "missing"
    return ast.unparse(target), state


def variable(scope: Scope, matches: Matcher, line: int) -> Value | None:
    """The value a local (or `self.x`, via `matches`) holds just before `line` in scope.func."""
    return _walk(scope.func.body, scope, matches, line, None)


def self_attribute(scope: Scope, attr: str, line: int) -> Value | None:
    """`self.attr`: assigned in this method before `line`, else in the class's `__init__`."""
    matches = lambda t: is_self_attr(t, attr)  # noqa: E731
    if any(matches(t) for n in _assigns(scope.func) for t in n.targets) or any(
            matches(n.target) for n in ast.walk(scope.func) if isinstance(n, ast.AnnAssign)):
        return variable(scope, matches, line)
    init = methods(scope.cls).get("__init__") if scope.cls is not None else None
    if init is not None and init is not scope.func:
        return variable(scope.child(init, scope.cls, scope.bindings), matches, 10 ** 9)
    return ("unknown", f"self.{attr}")


def _assigned_value(stmt: ast.stmt, matches: Matcher) -> ast.expr | None:
    if isinstance(stmt, ast.Assign) and any(matches(t) for t in stmt.targets):
        return stmt.value
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and matches(stmt.target):
        return stmt.value
    return None


def _walk(stmts: list[ast.stmt], scope: Scope, matches: Matcher, line: int, cur: Value | None) -> Value | None:
    for stmt in stmts:
        if stmt.lineno >= line:
            break
        end = stmt.end_lineno or stmt.lineno
        if end >= line:  # the use is inside this compound statement: follow the block that holds it
            for block in _blocks(stmt):
                if block and block[0].lineno <= line <= (block[-1].end_lineno or line):
                    return _walk(block, scope, matches, line, cur)
            return cur
        value = _assigned_value(stmt, matches)
        if value is not None:
            cur = resolve(value, scope, stmt.lineno)
        elif isinstance(stmt, ast.If):
            cur = _branch(stmt, scope, matches, line, cur)
        elif isinstance(stmt, (ast.For, ast.While, ast.With, ast.Try)):
            for block in _blocks(stmt):
                cur = _walk(block, scope, matches, line, cur)
    return cur


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    out = [getattr(stmt, "body", [])]
    out += [getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])]
    out += [h.body for h in getattr(stmt, "handlers", [])]
    return [b for b in out if b]


def _branch(stmt: ast.If, scope: Scope, matches: Matcher, line: int, cur: Value | None) -> Value | None:
    guard = _guarded_name(stmt.test)
    target_text = None
    for n in ast.walk(stmt):
        if isinstance(n, (ast.Assign, ast.AnnAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                if matches(t):
                    target_text = ast.unparse(t)
    if target_text is None:
        return cur
    if guard and guard[0] == target_text and guard[1] == "missing":  # `if x is None: x = fallback`
        return first(strip_none(cur), _walk(stmt.body, scope, matches, line, None))
    body = _walk(stmt.body, scope, matches, line, cur)
    orelse = _walk(stmt.orelse, scope, matches, line, cur)
    return body if body == orelse else first(body, orelse)


def returned(scope: Scope) -> Value | None:
    """What a helper function returns, as a fallback chain (guarded early returns come last)."""
    pending: list = []
    for stmt in scope.func.body:
        if isinstance(stmt, ast.Return):
            value = resolve(stmt.value, scope, stmt.lineno)
            for guard, early in reversed(pending):
                value = first(strip_none(value), early) if guard else first(early, value)
            return value
        if isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[-1], ast.Return):
            guard = _guarded_name(stmt.test)
            pending.append((guard is not None and guard[1] == "missing",
                            resolve(stmt.body[-1].value, scope, stmt.body[-1].lineno)))
    return ("unknown", f"{scope.func.name}(...)")
