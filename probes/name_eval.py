"""Evaluate a release's small, pure name helpers on one checkpoint name, from their source text (never imported).

A loader often hands each checkpoint name to a helper before it looks the parameter up: vLLM's
`Medusa._remap_old_checkpoint_key(name)` (`0.0.linear.weight` -> `blocks.0.layers.0.weight`),
`get_spec_layer_idx_from_weight_name(config, name)` (the MTP layer a name belongs to, or None),
`DeepSeekMTP._rewrite_spec_layer_name(spec_layer, name)`. Their bodies are string surgery on the name and
reads of the model config, so the readers keep each helper's source text in the facts (`helper_source`) and
`evaluate` runs it here on concrete values: a name, the config as a dict, an int. Only what such helpers are
made of is understood (literals, names, f-strings, arithmetic and comparisons, `str` methods, `len`/`range`/
`int`/`str`/`any`/`all`/`getattr`/`hasattr`/`isinstance`, comprehensions, `if`/`for`/`return`, the config's
attributes); anything else (a call into the engine, a tensor, `self` beyond its config) raises `Unsupported`, and
the caller answers "cannot tell". The work is bounded (STEPS).
"""

from __future__ import annotations

import ast
import functools
import operator
import re
from typing import Any

from compat.probes.drafter_code import Function

STEPS = 20_000
_STR_METHODS = {"startswith", "endswith", "replace", "split", "rsplit", "join", "isdigit", "index", "find", "rfind",
                "strip", "rstrip", "lstrip", "removeprefix", "removesuffix", "partition", "rpartition", "lower",
                "upper", "count", "format"}
_LIST_METHODS = {"index", "count"}
_SET_METHODS = {"intersection", "union", "difference", "issubset", "issuperset", "isdisjoint"}
_BUILTINS: dict[str, Any] = {"len": len, "range": range, "int": int, "str": str, "any": any, "all": all, "min": min,
                             "max": max, "enumerate": enumerate, "tuple": tuple, "list": list, "sorted": sorted, "bool": bool}
# the `re` module as helpers use it on a tensor name (`re.search(r"layers\.(\d+)\.", name)` in a layer-id helper):
# the functions run on the name, a match answers group()/groups()/start()/end()
_RE_FUNCTIONS = {"search", "match", "fullmatch", "sub", "findall", "split", "escape"}
_MATCH_METHODS = {"group", "groups", "start", "end", "span"}


class _ReModule:
    """The value of the name `re` in a helper: only the functions above are called."""


_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
        ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
        ast.Is: operator.is_, ast.IsNot: operator.is_not}


class Unsupported(Exception):
    """The helper does something this evaluator does not model: the answer is unknown."""


class Config:
    """The model config as the helper sees it: attributes of a dict (a missing one raises, like the real config)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def update(self, values: dict[str, Any]) -> None:
        self.values.update(values)


class _Self:
    """`self` of a method helper: only `self.config` is known."""

    def __init__(self, config: Config) -> None:
        self.config = config


class Refused(Exception):
    """The code raised (an `assert` that fails, a `raise` reached): what it says, and where."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message, self.line = message, line


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def helper_source(func: Function) -> dict[str, Any]:
    """What a step keeps of a helper: its source text (decorators dropped) and its parameter names."""
    params = [a.arg for a in func.args.args]
    copy = ast.parse(ast.unparse(func)).body[0]
    assert isinstance(copy, (ast.FunctionDef, ast.AsyncFunctionDef))
    copy.decorator_list = []
    defaults = dict(zip(params[len(params) - len(func.args.defaults):], (ast.unparse(d) for d in func.args.defaults)))
    return {"name": func.name, "params": params, "source": ast.unparse(copy), "defaults": defaults}


class Params:
    """`params_dict` as a helper sees it: a name is in it when the replay finds a module of the class for it."""

    def __init__(self, holds: Any) -> None:
        self.holds = holds

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and bool(self.holds(name))

    def get(self, name: str, default: Any = None) -> Any:
        return name if name in self else default


def evaluate(helper: dict[str, Any], args: dict[str, Any], config: dict[str, Any] | None,
             params: Params | None = None) -> Any:
    """The helper's return value for `args` (parameter name -> value; `self` and `config` are filled in: a
    parameter named like a config gets `config`, which the helper may change: `hf_config.update({...})`, and which a
    returned config gives back as a dict)."""
    func = _parsed(helper["source"])
    cfg = Config(config or {})
    env: dict[str, Any] = {"params_dict": params} if params is not None else {}
    for name, text in (helper.get("closure") or {}).items():
        env[name] = _Run({}).expr(ast.parse(text, mode="eval").body)
    for param in helper["params"]:
        if param == "self":
            env[param] = _Self(cfg)
        elif param in args:
            env[param] = args[param]
        elif "config" in param:
            env[param] = cfg
        elif param in (helper.get("defaults") or {}):
            env[param] = _Run({}).expr(ast.parse(helper["defaults"][param], mode="eval").body)
        else:
            raise Unsupported(f"no value for parameter {param}")
    run = _Run(env)
    try:
        run.block(func.body)
    except _Return as ret:
        return ret.value.values if isinstance(ret.value, Config) else ret.value
    except (_Break, _Continue):
        raise Unsupported("break outside a loop") from None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, ZeroDivisionError) as err:
        raise Unsupported(f"{type(err).__name__}: {err}") from None
    return None


@functools.lru_cache(maxsize=256)
def _parsed(source: str) -> ast.FunctionDef:
    """A helper's function, parsed once (a replay runs it on every name of a checkpoint)."""
    try:
        func = ast.parse(source).body[0]
    except SyntaxError as err:
        raise Unsupported(f"unparseable helper: {err}") from None
    if not isinstance(func, ast.FunctionDef):
        raise Unsupported("not a function")
    return func


class _Run:
    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env
        self.steps = 0

    def tick(self) -> None:
        self.steps += 1
        if self.steps > STEPS:
            raise Unsupported("too many steps")

    def block(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self.stmt(stmt)

    def stmt(self, node: ast.stmt) -> None:
        self.tick()
        if isinstance(node, ast.Return):
            raise _Return(self.expr(node.value) if node.value is not None else None)
        if isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Constant):
                return  # a docstring
            self.expr(node.value)
        elif isinstance(node, ast.Assign):
            value = self.expr(node.value)
            for target in node.targets:
                self.assign(target, value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.assign(node.target, self.expr(node.value))
        elif isinstance(node, ast.AugAssign) and type(node.op) in _BIN:
            self.assign(node.target, _BIN[type(node.op)](self.expr(node.target), self.expr(node.value)))
        elif isinstance(node, ast.If):
            self.block(node.body if self.expr(node.test) else node.orelse)
        elif isinstance(node, ast.For):
            self.loop(node)
        elif isinstance(node, ast.Break):
            raise _Break
        elif isinstance(node, ast.Continue):
            raise _Continue
        elif isinstance(node, ast.Pass):
            return
        elif isinstance(node, ast.Assert):
            if not self.expr(node.test):
                raise Refused(_message(self, node.msg) or f"AssertionError: {ast.unparse(node.test)}", node.lineno)
        elif isinstance(node, ast.Raise):
            exc = node.exc
            text = _message(self, exc.args[0]) if isinstance(exc, ast.Call) and exc.args else None
            kind = ast.unparse(exc.func if isinstance(exc, ast.Call) else exc) if exc is not None else "raise"
            raise Refused(f"{kind}: {text}" if text else kind, node.lineno)
        else:
            raise Unsupported(type(node).__name__)

    def loop(self, node: ast.For) -> None:
        for item in self.expr(node.iter):
            self.assign(node.target, item)
            try:
                self.block(node.body)
            except _Break:
                return
            except _Continue:
                continue
        self.block(node.orelse)

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, ast.Attribute) and isinstance(holder := self.expr(target.value), Config):
            holder.values[target.attr] = value.values if isinstance(value, Config) else value
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = list(value)
            if len(values) != len(target.elts):
                raise Unsupported("unpacking")
            for t, v in zip(target.elts, values):
                self.assign(t, v)
        else:
            raise Unsupported(f"assignment to {type(target).__name__}")

    def expr(self, node: ast.expr | None) -> Any:  # noqa: C901  (one branch per node kind)
        self.tick()
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            if node.id in _BUILTINS:
                return _BUILTINS[node.id]
            if node.id == "re":
                return _ReModule()
            if node.id in ("None", "True", "False"):
                return {"None": None, "True": True, "False": False}[node.id]
            raise Unsupported(f"unknown name {node.id}")
        if isinstance(node, ast.JoinedStr):
            return "".join(str(self.expr(v.value)) if isinstance(v, ast.FormattedValue) else str(getattr(v, "value", ""))
                           for v in node.values)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self.expr(e) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items) if isinstance(node, ast.Tuple) else set(items)
        if isinstance(node, ast.Dict):
            return {self.expr(k): self.expr(v) for k, v in zip(node.keys, node.values) if k is not None}
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            return _BIN[type(node.op)](self.expr(node.left), self.expr(node.right))
        if isinstance(node, ast.UnaryOp):
            value = self.expr(node.operand)
            if isinstance(node.op, ast.Not):
                return not value
            if isinstance(node.op, ast.USub):
                return -value
            raise Unsupported("unary")
        if isinstance(node, ast.BoolOp):
            result: Any = isinstance(node.op, ast.And)
            for v in node.values:
                result = self.expr(v)
                if isinstance(node.op, ast.And) and not result or isinstance(node.op, ast.Or) and result:
                    return result
            return result
        if isinstance(node, ast.Compare):
            left = self.expr(node.left)
            for op, comp in zip(node.ops, node.comparators):
                right = self.expr(comp)
                if not _CMP[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.expr(node.body) if self.expr(node.test) else self.expr(node.orelse)
        if isinstance(node, ast.NamedExpr):
            value = self.expr(node.value)
            self.assign(node.target, value)
            return value
        if isinstance(node, ast.Subscript):
            holder = self.expr(node.value)
            if isinstance(node.slice, ast.Slice):
                s = node.slice
                return holder[slice(self.expr(s.lower), self.expr(s.upper), self.expr(s.step))]
            return holder[self.expr(node.slice)]
        if isinstance(node, ast.Attribute):
            holder = self.expr(node.value)
            if isinstance(holder, (Config, _Self)):
                return _attribute(holder, node.attr)
            raise Unsupported(f"attribute {node.attr}")
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            items = self.comprehension(node.elt, node.generators)
            return set(items) if isinstance(node, ast.SetComp) else items
        if isinstance(node, ast.Call):
            return self.call(node)
        raise Unsupported(type(node).__name__)

    def comprehension(self, elt: ast.expr, generators: list[ast.comprehension]) -> list[Any]:
        out: list[Any] = []

        def walk(i: int) -> None:
            if i == len(generators):
                out.append(self.expr(elt))
                return
            gen = generators[i]
            for item in self.expr(gen.iter):
                self.assign(gen.target, item)
                if all(self.expr(cond) for cond in gen.ifs):
                    walk(i + 1)

        saved = dict(self.env)
        walk(0)
        self.env = saved
        return out

    def call(self, node: ast.Call) -> Any:
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords if k.arg}
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in ("getattr", "hasattr") and args and isinstance(args[0], (Config, _Self)):
                try:
                    value = _attribute(args[0], args[1])
                except Unsupported:
                    if func.id == "hasattr":
                        return False
                    if len(args) > 2:
                        return args[2]
                    raise
                return True if func.id == "hasattr" else value
            if func.id == "isinstance":
                return _isinstance(args[0], node.args[1])
            if func.id in _BUILTINS and func.id not in self.env:
                return _BUILTINS[func.id](*args, **kwargs)
            raise Unsupported(f"call {func.id}")
        if isinstance(func, ast.Attribute):
            holder = self.expr(func.value)
            if isinstance(holder, str) and func.attr in _STR_METHODS:
                return getattr(holder, func.attr)(*args, **kwargs)
            if isinstance(holder, (list, tuple)) and func.attr in _LIST_METHODS:
                return getattr(holder, func.attr)(*args)
            if isinstance(holder, (set, frozenset)) and func.attr in _SET_METHODS:
                return getattr(holder, func.attr)(*args)
            if isinstance(holder, _ReModule) and func.attr in _RE_FUNCTIONS and all(isinstance(a, str) for a in args):
                return getattr(re, func.attr)(*args)
            if isinstance(holder, re.Match) and func.attr in _MATCH_METHODS:
                return getattr(holder, func.attr)(*args)
            if isinstance(holder, Params) and func.attr == "get":
                return holder.get(*args)
            if isinstance(holder, Config) and func.attr in ("get", "update"):
                return getattr(holder, func.attr)(*args)
            if isinstance(holder, dict) and func.attr in ("get", "items", "keys", "values"):
                return getattr(holder, func.attr)(*args)
        raise Unsupported(f"call {ast.unparse(func)}")


def _message(run: _Run, node: ast.expr | None) -> str | None:
    """The message of an assert or raise, its holes filled when they can be, else as written."""
    if node is None:
        return None
    try:
        return str(run.expr(node))
    except (Unsupported, TypeError, ValueError, KeyError, IndexError):
        return ast.unparse(node)


def refusal(source: str, config: dict[str, Any] | None, first_line: int = 1) -> tuple[str, int] | None:
    """Run statements (a function's prologue, as source text) on the config, one by one: the first `assert` that
    fails or `raise` reached, as (message, line counted from `first_line`); a statement this evaluator cannot run is
    passed over (what it would assign stays unknown, so what reads it is passed over too)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return None
    cfg = Config(config or {})
    run = _Run({"self": _Self(cfg), "config": cfg})
    for stmt in body:
        try:
            run.stmt(stmt)
        except Refused as err:
            return err.message, err.line + first_line - 1
        except (Unsupported, _Return, _Break, _Continue, TypeError, ValueError, KeyError, IndexError, AttributeError,
                ZeroDivisionError):
            continue
    return None


def _attribute(holder: Config | _Self, attr: str) -> Any:
    if isinstance(holder, _Self):
        if attr == "config":
            return holder.config
        raise Unsupported(f"self.{attr}")
    if attr in holder.values:
        value = holder.values[attr]
        return Config(value) if isinstance(value, dict) else value
    raise Unsupported(f"config has no {attr}")


def _isinstance(value: Any, kind: ast.expr) -> bool:
    names = [e for e in (kind.elts if isinstance(kind, ast.Tuple) else [kind]) if isinstance(e, ast.Name)]
    types = {"str": str, "int": int, "list": list, "tuple": tuple, "dict": dict, "bool": bool}
    known = [types[n.id] for n in names if n.id in types]
    if not known:
        raise Unsupported("isinstance")
    return isinstance(value, tuple(known))
