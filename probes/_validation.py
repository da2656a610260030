"""A release's validation code as data: the statements of the functions that build and check the speculative settings,
in the compact form compat/guards/ walks (a reader the spec_validation probes of both engines share, not a probe).

    Program(tree).function(relpath, node, key)   # reads it and every short function it calls, once
    program.to_json() -> {"functions": {...}, "constants": {...}}

A function is {"file", "line", "params", "defaults", "body"}: its statements in order, each a list whose first item
says what it is and whose expressions are source text (what compat/guards/expressions.py parses):

    ["if", line, test, body, orelse]          ["raise", line, exception, message]   ["assert", line, test, message]
    ["=", line, [targets], value]             ["call", line, expression]            ["return", line, value]
    ["for", line, target, iterable, body]     ["try", line, body, [[caught, body], ...]]
    ["continue", line]  ["break", line]

Logger calls, docstrings, imports and nested definitions are left out (they decide nothing); a `with` is its body.
A function too long to read whole ("when short": MAX_STATEMENTS) is kept as what it assigns: {"file", "line",
"effects": ["self.x", ...]}, which the reader then does not know. Constants are the module-level names the
functions read whose value is a literal or a `Literal[...]` alias (a list of its strings), each with its file:line.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable
from typing import Any

from compat.core.tree import EngineTree
from compat.probes._ast import find_def
from compat.probes._error_sites import LOG_LEVELS, LOGGER_NAMES

MAX_STATEMENTS = 220  # a function with more statements (at any depth) is kept as its effects only
MAX_FUNCTIONS = 80  # functions read per program: the calls followed stop there
_BUILTINS = frozenset(dir(builtins))
Resolver = Callable[[str, str], "tuple[Any, str] | None"]  # (relpath, name) -> (value, "file:line") or None


def _is_noise(stmt: ast.stmt) -> bool:
    """A statement that decides nothing: a docstring, a logger's or warnings' call, an import, a nested def."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass,
                         ast.Global, ast.Nonlocal, ast.Delete)):
        return True
    if isinstance(stmt, ast.Expr):
        value = stmt.value
        if isinstance(value, ast.Constant):
            return True
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            owner = value.func.value
            name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if value.func.attr in LOG_LEVELS and (name in LOGGER_NAMES or name.endswith("logger")):
                return True
            if name == "warnings" and value.func.attr == "warn":
                return True
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("print", "print_warning_once"):
            return True
    return False


def encode(body: list[ast.stmt]) -> list:
    out: list = []
    for stmt in body:
        if _is_noise(stmt):
            continue
        encoded = _encode(stmt)
        if encoded is not None:
            out.extend(encoded if encoded and isinstance(encoded[0], list) else [encoded])
    return out


def _encode(stmt: ast.stmt) -> list | None:
    line = stmt.lineno
    if isinstance(stmt, ast.If):
        return ["if", line, ast.unparse(stmt.test), encode(stmt.body), encode(stmt.orelse)]
    if isinstance(stmt, ast.Raise):
        if stmt.exc is None:
            return ["raise", line, None, None]
        call = stmt.exc if isinstance(stmt.exc, ast.Call) else None
        name = ast.unparse(call.func if call is not None else stmt.exc)
        message = ast.unparse(call.args[0]) if call is not None and call.args else None
        return ["raise", line, name.rpartition(".")[2], message]
    if isinstance(stmt, ast.Assert):
        return ["assert", line, ast.unparse(stmt.test), ast.unparse(stmt.msg) if stmt.msg is not None else None]
    if isinstance(stmt, ast.Assign):
        return ["=", line, [ast.unparse(t) for t in stmt.targets], ast.unparse(stmt.value)]
    if isinstance(stmt, ast.AnnAssign):
        return ["=", line, [ast.unparse(stmt.target)], ast.unparse(stmt.value)] if stmt.value is not None else None
    if isinstance(stmt, ast.AugAssign):
        target = ast.unparse(stmt.target)
        value = ast.unparse(ast.BinOp(stmt.target, stmt.op, stmt.value))
        return ["=", line, [target], value]
    if isinstance(stmt, ast.Expr):
        return ["call", line, ast.unparse(stmt.value)]
    if isinstance(stmt, ast.Return):
        return ["return", line, ast.unparse(stmt.value) if stmt.value is not None else None]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return ["for", line, ast.unparse(stmt.target), ast.unparse(stmt.iter), encode(stmt.body)]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return encode(stmt.body) or None
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        tried: Any = stmt
        handlers = [[ast.unparse(h.type) if h.type is not None else None, encode(h.body)] for h in tried.handlers]
        body = encode(tried.body) + encode(getattr(tried, "orelse", []))
        return ["try", line, body, handlers] + ([encode(tried.finalbody)] if tried.finalbody else [])
    if isinstance(stmt, ast.Continue):
        return ["continue", line]
    if isinstance(stmt, ast.Break):
        return ["break", line]
    if isinstance(stmt, ast.While):
        return ["for", line, "_", "_loop_", encode(stmt.body)]  # read as a loop of unknown length
    if isinstance(stmt, ast.Match):
        return None
    return None


def size(node: ast.AST) -> int:
    return sum(1 for n in ast.walk(node) if isinstance(n, ast.stmt))


def effects(node: ast.AST, owner: str = "self") -> list[str]:
    """The `owner.x` attributes a function assigns anywhere in it (what is unknown after a call not read)."""
    out: dict[str, None] = {}
    for sub in ast.walk(node):
        targets: list[ast.AST] = []
        if isinstance(sub, ast.Assign):
            targets = list(sub.targets)
        elif isinstance(sub, (ast.AugAssign, ast.AnnAssign)):
            targets = [sub.target]
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == owner:
                    out[f"{owner}.{part.attr}"] = None
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "setattr" and sub.args \
                and isinstance(sub.args[0], ast.Name) and sub.args[0].id == owner:
            out[f"{owner}.*"] = None
    return list(out)


def params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[str], dict[str, str], str | None]:
    """(parameter names in order, name -> default's source, the **kwargs name)."""
    args = fn.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    defaults = {a: ast.unparse(d) for a, d in zip(positional[len(positional) - len(args.defaults):], args.defaults)}
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        if default is not None:
            defaults[arg.arg] = ast.unparse(default)
    return positional + [a.arg for a in args.kwonlyargs], defaults, args.kwarg.arg if args.kwarg else None


def is_static(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


class Program:
    """The functions read for one validation path, and the constants they read."""

    def __init__(self, tree: EngineTree, resolve: Resolver) -> None:
        self.tree = tree
        self.resolve = resolve
        self.functions: dict[str, dict] = {}
        self.constants: dict[str, Any] = {}
        self.constant_at: dict[str, str] = {}
        self._classes: dict[str, tuple[str, ast.ClassDef]] = {}  # class name -> where, for `self.m()` / `Cls.m()`
        self._modules: dict[str, ast.Module | None] = {}
        self._tried: set[str] = set()
        self.used_classes: dict[str, dict] = {}
        self._classes_declared: dict[str, tuple[str, ast.ClassDef]] = {}
        self._found: dict[tuple[str, str, int], tuple[str, ast.ClassDef] | None] = {}
        self._lazy: dict[str, str] = {}  # class -> its file, for add_lazy_class
        self._defs: dict[str, set[bytes]] = {}
        self._lazy_found: dict[tuple[str, str], ast.FunctionDef | ast.AsyncFunctionDef | None] = {}
        # key, function -> read it whole (True) or keep what it assigns (False); None: by size
        self.inline: Callable[[str, ast.FunctionDef | ast.AsyncFunctionDef], bool] | None = None
        self.max_statements = MAX_STATEMENTS  # a function longer than this is kept as its effects (unless whole)  # classes the functions build or test with isinstance (see _classes)

    def to_json(self) -> dict:
        return {"functions": self.functions, "constants": self.constants, "constant_at": self.constant_at,
                "classes": list(self.used_classes.values())}

    def add_class(self, relpath: str, cls: ast.ClassDef) -> None:
        self._classes[cls.name] = (relpath, cls)

    def add_lazy_class(self, name: str, relpath: str) -> None:
        """A class whose methods are found one by one in its file (a huge module is never parsed whole)."""
        self._lazy[name] = relpath

    def method_node(self, cls_name: str, name: str) -> tuple[str, ast.FunctionDef | ast.AsyncFunctionDef] | None:
        if cls_name in self._lazy:
            relpath = self._lazy[cls_name]
            if relpath not in self._defs:  # the names defined in the file, found by bytes once
                self._defs[relpath] = set(re.findall(rb"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", self.tree.read_bytes(relpath), re.M))
            if name.encode() not in self._defs[relpath]:
                return None
            key = (relpath, name)
            if key not in self._lazy_found:
                self._lazy_found[key] = find_def(self.tree, relpath, name)
            node = self._lazy_found[key]
            return (relpath, node) if node is not None else None
        found = self._classes.get(cls_name) or self._classes_declared.get(cls_name)
        if found is None:
            return None
        relpath, cls = found
        for member in cls.body:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name == name:
                return relpath, member
        return None

    def function(self, relpath: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, key: str, owner: str | None = None,
                 *, whole: bool = False, receiver: str | None = None) -> None:
        """Read `fn` (a method of `owner`, or a module function) under `key`, and what it calls, when short."""
        if key in self.functions:
            return
        names, defaults, kwarg = params(fn)
        entry: dict[str, Any] = {"file": relpath, "line": fn.lineno, "params": names}
        if defaults:
            entry["defaults"] = defaults
        if kwarg:
            entry["kwarg"] = kwarg
        if owner is not None and any(isinstance(d, ast.Name) and d.id == "classmethod" for d in fn.decorator_list):
            entry["classmethod"] = True  # its first parameter is the class
        elif owner is not None and not is_static(fn):
            entry["method"] = True
        if receiver is not None:  # a module function handed an instance of `receiver` first (handle_x(server_args))
            entry["receiver"] = receiver
        if any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list):
            entry["property"] = True
        self.functions[key] = entry
        declined = not whole and self.inline is not None and not self.inline(key, fn)
        if declined or (not whole and size(fn) > self.max_statements) or len(self.functions) > MAX_FUNCTIONS:
            entry["effects"] = effects(fn, names[0] if names and entry.get("method") else "self")
            return
        entry["body"] = encode(fn.body)
        self._constants(relpath, fn)
        self._follow(relpath, fn, owner or receiver)
        if relpath not in self._lazy.values():  # a huge module is not parsed whole for the classes it imports
            self._classes_of(relpath, fn)

    def _classes_of(self, relpath: str, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """The classes of the release a function builds (`EAGLEConfig(cfg, method=...)`) or tests with isinstance: each
        with its bases, its `model_type` class attribute (what a transformers config class answers to) and, when
        short, its `__init__` (read like a function)."""
        names: dict[str, None] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id == "isinstance" and len(node.args) == 2:
                    kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                    names.update((k.id, None) for k in kinds if isinstance(k, ast.Name))
                elif node.func.id[:1].isupper():
                    names[node.func.id] = None
        for name in names:
            if name in self.used_classes or name in self._classes_declared:
                continue
            found = self._import_of(relpath, fn, name)
            if found is None:
                continue
            where, cls = found
            spec: dict[str, Any] = {"name": name, "file": where, "line": cls.lineno,
                                    "bases": [ast.unparse(b) for b in cls.bases], "fields": {}, "construction": []}
            for stmt in cls.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                        and stmt.targets[0].id == "model_type" and isinstance(stmt.value, ast.Constant):
                    spec["model_type"] = stmt.value.value
            self.used_classes[name] = spec
            init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            if init is not None:
                self._classes_declared[name] = (where, cls)
                self.function(where, init, f"{name}.__init__", name)
                if self.functions[f"{name}.__init__"].get("body") is not None:
                    spec["init"] = f"{name}.__init__"

    def _import_of(self, relpath: str, fn: ast.AST, name: str) -> tuple[str, ast.ClassDef] | None:
        """Where the class `name` used in fn is defined: imported in the function or the module, or of the module."""
        module = self._module(relpath)
        imports = [n for n in ast.walk(fn) if isinstance(n, ast.ImportFrom)] + \
            [n for n in (module.body if module else []) if isinstance(n, ast.ImportFrom)]
        for node in imports:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    home = self._module_path(relpath, node)
                    found = self._class_in(home, alias.name) if home else None
                    if found is not None:
                        return found
        return self._class_in(relpath, name)

    def _class_in(self, relpath: str, name: str, hops: int = 2) -> tuple[str, ast.ClassDef] | None:
        key = (relpath, name, hops)
        if key not in self._found:
            self._found[key] = self._find_class(relpath, name, hops)
        return self._found[key]

    def _find_class(self, relpath: str, name: str, hops: int) -> tuple[str, ast.ClassDef] | None:
        module = self._module(relpath)
        if module is None:
            return None
        for node in module.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return relpath, node
        if hops > 0:  # a package's __init__ re-exporting it, or naming its module in a lazy-import table
            for node in module.body:
                if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
                    home = self._module_path(relpath, node)
                    original = next(a.name for a in node.names if (a.asname or a.name) == name)
                    if home:
                        return self._class_in(home, original, hops - 1)
            tables = [n.value for n in module.body if isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, ast.Dict)]
            for table in tables:
                if isinstance(table, ast.Dict):
                    for key, value in zip(table.keys, table.values):
                        if isinstance(key, ast.Constant) and key.value == name and isinstance(value, ast.Constant) \
                                and isinstance(value.value, str):
                            home = self._module_path(relpath, ast.ImportFrom(module=value.value, names=[], level=0))
                            if home:
                                return self._class_in(home, name, hops - 1)
        return None

    def _module_path(self, relpath: str, node: ast.ImportFrom) -> str | None:
        if node.level:
            package = relpath.rsplit("/", 1)[0]
            for _ in range(node.level - 1):
                package = package.rsplit("/", 1)[0]
            dotted = package.replace("/", ".") + (f".{node.module}" if node.module else "")
        else:
            dotted = node.module or ""
        base = dotted.replace(".", "/")
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if self.tree.exists(candidate):
                return candidate
        return None

    def _follow(self, relpath: str, fn: ast.AST, owner: str | None) -> None:
        first = None  # the name the function knows the object validated by (self; a handler's server_args)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.args.args and not is_static(fn):
            first = fn.args.args[0].arg
        called = {id(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)}
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                holder = node.value.id
                on_self = holder in ("self", first) and owner is not None
                cls_name = owner if on_self else holder if holder in self._classes else None
                if cls_name is None:
                    continue
                found = self.method_node(cls_name, node.attr)
                # a method called, a property read, or `Class.method` held as a value (hf_overrides=...)
                if found is not None and (id(node) in called or _is_property(found[1]) or not on_self):
                    self.function(found[0], found[1], f"{cls_name}.{node.attr}", cls_name)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in self.functions:
                # handed the object validated (a class the program was given, not a config class it builds)
                handed = owner is not None and (owner in self._classes or owner in self._lazy) and bool(node.args) \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id in ("self", first)
                # a function of this module, or one of another module handed the object validated (its handler);
                # a helper imported from elsewhere (a device query, a file check) is not the release's validation
                found_fn = self._function_named(relpath, fn, node.func.id, imported=handed)
                if found_fn is not None:
                    self.function(found_fn[0], found_fn[1], node.func.id, receiver=owner if handed else None)

    def called(self, relpath: str, fn: ast.AST, call: ast.Call, owner: str) -> tuple[str, str, ast.FunctionDef | ast.AsyncFunctionDef, str | None] | None:
        """What a call in fn (a method of `owner`) runs: (file, key, function, receiver), a method of owner
        (`self.m()`) or a function of the module or imported (`f(self)`, handed the object)."""
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            found = self.method_node(owner, func.attr)
            return (found[0], f"{owner}.{func.attr}", found[1], None) if found is not None else None
        if isinstance(func, ast.Name):
            handed = bool(call.args) and isinstance(call.args[0], ast.Name) and call.args[0].id == "self"
            named = self._function_named(relpath, fn, func.id, imported=handed)
            return (named[0], func.id, named[1], owner if handed else None) if named is not None else None
        return None

    def _function_named(self, relpath: str, fn: ast.AST, name: str,
                        imported: bool = True) -> tuple[str, ast.FunctionDef | ast.AsyncFunctionDef] | None:
        """A module function `name` called in fn: defined in its module, or (`imported`) imported there or in fn."""
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
        if relpath in self._lazy.values():  # found by its own slice, the module not parsed whole
            found = find_def(self.tree, relpath, name)
            if found is not None and found.col_offset == 0:
                return relpath, found
            module = None
        else:
            module = self._module(relpath)
            target = next((n for n in (module.body if module else []) if isinstance(n, kinds) and n.name == name), None)
            if target is not None:
                return relpath, target
        if not imported:
            return None
        imports = [n for n in ast.walk(fn) if isinstance(n, ast.ImportFrom)] + \
            [n for n in (module.body if module else []) if isinstance(n, ast.ImportFrom)]
        for node in imports:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    home = self._module_path(relpath, node)
                    found = find_def(self.tree, home, alias.name) if home else None
                    if found is not None:
                        return home, found  # type: ignore[return-value]
        return None

    def _module(self, relpath: str) -> ast.Module | None:
        if relpath not in self._modules:
            try:
                self._modules[relpath] = self.tree.parse(relpath)
            except Exception:  # an unparseable module has no functions to follow
                self._modules[relpath] = None
        return self._modules[relpath]

    def _constants(self, relpath: str, fn: ast.AST) -> None:
        local = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local |= {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local \
                    and node.id not in self.constants and node.id not in _BUILTINS and node.id not in self._tried:
                self._tried.add(node.id)
                found = self.resolve(relpath, node.id)
                if found is not None:
                    self.constants[node.id], self.constant_at[node.id] = found


def _is_property(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id in ("property", "cached_property") or
               isinstance(d, ast.Attribute) and d.attr == "cached_property" for d in fn.decorator_list)


def field_entry(stmt: ast.AnnAssign) -> dict:
    """A dataclass field's default (a literal, or {"expr": source}) and its pydantic bounds (`Field(gt=0)`)."""
    value = stmt.value
    out: dict[str, Any] = {"line": stmt.lineno}
    if value is None:
        out["required"] = True
        return out
    default: ast.AST | None = value
    if isinstance(value, ast.Call):
        name = value.func.id if isinstance(value.func, ast.Name) else value.func.attr if isinstance(value.func, ast.Attribute) else ""
        if name in ("Field", "field"):
            keywords = {k.arg: k.value for k in value.keywords if k.arg}
            default = keywords.get("default")
            factory = keywords.get("default_factory")
            if default is None and factory is not None:
                factory_name = ast.unparse(factory)
                out["default"] = {"list": [], "dict": {}, "set": [], "tuple": []}.get(factory_name, {"expr": f"{factory_name}()"})
                default = None
            elif default is None and not value.args:
                out["required"] = True
            for bound in ("gt", "ge", "lt", "le"):
                if bound in keywords:
                    try:
                        out[bound] = ast.literal_eval(keywords[bound])
                    except (ValueError, SyntaxError):
                        pass
    if default is not None:
        try:
            out["default"] = ast.literal_eval(default)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            out["default"] = {"expr": ast.unparse(default)}
    return out
