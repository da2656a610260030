"""SGLang's speculative server arguments in all three ways they have been declared.

- up to 0.5.13.post1: plain `ServerArgs` dataclass fields, flags from explicit
  `parser.add_argument(...)` calls in `ServerArgs.add_cli_args`;
- 0.5.14-0.5.19: `ServerArgs` fields annotated `A[T, "help"]` / `A[T, Arg(...)]`, turned into
  `--field-name` flags by `add_cli_args_from_dataclass` (bool -> store_true, Literal -> choices);
  a few flags stay explicit `add_argument` calls;
- 0.5.20+: msgspec namespace classes (`class Spec(msgspec.Struct)` with `_NS_PATH = "spec"`)
  imported by server_args.py and merged into `ServerArgs = msgspec.defstruct(...)`.

The namespaces are found by what they are (a class carrying `_NS_PATH` in a module that
server_args.py imports), so a renamed or split namespace file is still found.
"""

from __future__ import annotations

import ast
from typing import TypeGuard
import functools
import operator
import re
from dataclasses import dataclass, field

from compat.probes._ast import class_fields, field_name, find_class, literal, methods, top_level_classes
from compat.probes.sglang._models import memo_on_tree
from compat.probes.sglang._source import parse_piece, top_level_end
from compat.core.tree import EngineTree

SERVER_ARGS_HOME = "sglang/srt/server_args.py"
SPEC_WORDS = ("speculative", "eagle", "draft", "dflash", "ngram")


def is_speculative(name: str) -> bool:
    low = name.lower()
    return any(word in low for word in SPEC_WORDS)


@dataclass
class FieldDecl:
    name: str
    type: str
    default: object
    relpath: str
    node: ast.AnnAssign
    owner: str  # ServerArgs or the namespace class
    namespace: str | None  # the namespace's _NS_PATH ("spec"), None for ServerArgs itself
    meta: dict | None = None  # from A[T, "help"] / A[T, Arg(...)]: help, choices, aliases, no_cli, ...
    inner_type: ast.AST | None = None  # T of A[T, ...]


@dataclass
class Flag:
    name: str
    aliases: list[str]
    type: str | None
    default: object
    choices: object
    relpath: str
    node: ast.AST
    style: str  # add_argument | annotated_dataclass | msgspec_namespace
    dest: str
    action: str | None = None
    nargs: str | None = None


@dataclass
class ServerArgsSource:
    relpath: str
    line: int  # of `class ServerArgs`
    fields: list[FieldDecl] = field(default_factory=list)
    namespaces: list[tuple[str, str, ast.ClassDef]] = field(default_factory=list)  # (path, relpath, class)
    flags: list[Flag] = field(default_factory=list)


def server_args_source(tree: EngineTree) -> ServerArgsSource | None:
    return memo_on_tree(tree, "server_args_source", _build)


# -- constants ---------------------------------------------------------------------------
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Pow: operator.pow}


def constant(node: ast.AST | None):
    """A literal's value; simple arithmetic (`10 * 1000 * 1000`) folded; else the source text."""
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = constant(node.left), constant(node.right)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)) and not isinstance(left, bool):
            try:
                return _OPS[type(node.op)](left, right)
            except (ArithmeticError, ValueError):
                pass
        return ast.unparse(node)
    return literal(node)


def module_constant(tree: EngineTree, relpath: str, name: str, hops: int = 1):
    """The literal value bound to module-level `name` in relpath (see _module_constant)."""
    return _module_constant(tree, relpath, name, hops)


def _module_constant(tree: EngineTree, relpath: str, name: str, hops: int = 1):
    """The literal value bound to module-level `name` in relpath, following one `from x import name`.

    Found by bytes and parsed statement by statement: a constant must not cost a parse of a
    360 KB server_args.py, nor fail on newer syntax elsewhere in that file.
    """
    if not tree.exists(relpath):
        return None
    data = tree.read_bytes(relpath)
    lines = _Lines(data)
    key = re.escape(name.encode())
    for m in re.finditer(rb"(?:^|\n)(%s)[ \t]*(?::[^=\n]*)?=(?!=)" % key, data):
        node = _statement_at(data, m.start(1), lines(m.start(1)))
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            value = constant(node.value)
            return value if not isinstance(value, str) or isinstance(node.value, ast.Constant) else None
    if hops > 0:
        for m in _IMPORT_NAMES.finditer(data):
            for item in m.group(2).strip(b"()").replace(b"\n", b" ").split(b","):
                words = item.split()
                if words and (words[-1] if len(words) == 3 and words[1] == b"as" else words[0]) == name.encode():
                    return _module_constant(tree, _module_file(tree, m.group(1).decode()), words[0].decode(), hops - 1)
    return None


_IMPORT_NAMES = re.compile(rb"(?:^|\n)[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)")


def _module_file(tree: EngineTree, module: str) -> str:
    base = module.replace(".", "/")
    return f"{base}/__init__.py" if tree.exists(f"{base}/__init__.py") else f"{base}.py"


def resolve_choices(tree: EngineTree, relpath: str, node: ast.AST | None):
    """`choices=` as a list when it is a literal or a module constant, else its source text."""
    if node is None:
        return None
    value = constant(node)
    if isinstance(node, ast.Name) and not isinstance(value, (list, tuple, set, frozenset)):
        value = _module_constant(tree, relpath, node.id)
    if isinstance(value, (set, frozenset)):  # a set has no order: sorted, so a fact reads the same in every process
        return sorted(value, key=str)
    if isinstance(value, (list, tuple)):
        return list(value)
    return ast.unparse(node)


# -- annotations -------------------------------------------------------------------------
def _annotated(annotation: ast.AST) -> tuple[ast.AST, list[ast.AST]] | None:
    """(T, metadata) of `A[T, ...]` / `Annotated[T, ...]` / `typing.Annotated[T, ...]`."""
    if not isinstance(annotation, ast.Subscript):
        return None
    head = annotation.value
    name = head.id if isinstance(head, ast.Name) else head.attr if isinstance(head, ast.Attribute) else None
    if name not in ("A", "Annotated"):
        return None
    items = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
    return (items[0], list(items[1:])) if items else None


def _arg_meta(metadata: list[ast.AST]) -> dict | None:
    """`"help"` or `Arg(help=..., choices=..., aliases=..., no_cli=...)` as a dict of nodes."""
    for item in metadata:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            return {"help": item}
        if isinstance(item, ast.Call):
            func = item.func
            fname = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if fname == "Arg":
                return {kw.arg: kw.value for kw in item.keywords if kw.arg}
    return None


def _unwrap_optional(node: ast.AST) -> ast.AST:
    if isinstance(node, ast.Subscript) and isinstance(node.value, (ast.Name, ast.Attribute)):
        head = node.value.id if isinstance(node.value, ast.Name) else node.value.attr
        if head == "Optional":
            return node.slice
        if head == "Union" and isinstance(node.slice, ast.Tuple):
            rest = [e for e in node.slice.elts if not (isinstance(e, ast.Constant) and e.value is None)]
            if len(rest) == 1:
                return rest[0]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [s for s in (node.left, node.right) if not (isinstance(s, ast.Constant) and s.value is None)]
        if len(sides) == 1:
            return sides[0]
    return node


def _subscript_head(node: ast.AST) -> str | None:
    if isinstance(node, ast.Subscript):
        head = node.value
        return head.id if isinstance(head, ast.Name) else head.attr if isinstance(head, ast.Attribute) else None
    return None


def _fields_of(tree: EngineTree, relpath: str, cls: ast.ClassDef, namespace: str | None) -> list[FieldDecl]:
    out = []
    for stmt in class_fields(cls):
        name = field_name(stmt)
        if name.startswith("__"):
            continue
        annotated = _annotated(stmt.annotation)
        inner, meta = (annotated[0], _arg_meta(annotated[1])) if annotated else (stmt.annotation, None)
        out.append(FieldDecl(
            name=name, type=ast.unparse(inner), default=constant(stmt.value) if stmt.value is not None else None,
            relpath=relpath, node=stmt, owner=cls.name, namespace=namespace, meta=meta, inner_type=inner,
        ))
    return out


def _ns_path(cls: ast.ClassDef) -> str | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_NS_PATH" for t in stmt.targets):
            value = literal(stmt.value)
            return value if isinstance(value, str) else ast.unparse(stmt.value)
    return None


def _module_level(body: list[ast.stmt]):
    """Module-level statements, including those under top-level if/try (not inside defs or classes)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.If, ast.Try)):
            for part in (stmt.body, stmt.orelse, getattr(stmt, "finalbody", []), *[h.body for h in getattr(stmt, "handlers", [])]):
                yield from _module_level(part)


def _namespaces(tree: EngineTree, imported: list[str], every: bool = False) -> list[tuple[str, str, ast.ClassDef]]:
    """Classes carrying `_NS_PATH` in the sglang modules that server_args.py imports (every: not only the
    namespaces with a speculative field)."""
    out, seen = [], set()
    for name in imported:
        if not name.startswith("sglang."):
            continue
        relpath = _module_file(tree, name)
        if relpath in seen or not tree.exists(relpath):
            continue
        seen.add(relpath)
        data = tree.read_bytes(relpath)
        # only namespaces declaring a speculative field are parsed (a dozen files, ~0.1 s for all)
        if b"_NS_PATH" not in data or not (every or _SPEC_FIELD.search(data)):
            continue
        for cls in top_level_classes(tree.parse(relpath)).values():
            path = _ns_path(cls)
            if path is not None:
                out.append((path, relpath, cls))
    return out


# -- flags -------------------------------------------------------------------------------
def _is_add_argument(node: ast.AST) -> TypeGuard[ast.Call]:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"


def _add_argument_flags(tree: EngineTree, relpath: str, calls: list[ast.Call], fields: dict[str, FieldDecl]) -> list[Flag]:
    out = []
    for node in calls:
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not names or not names[0].startswith("-"):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        dest = literal(kw["dest"]) if "dest" in kw else names[0].lstrip("-").replace("-", "_")
        action = kw.get("action")
        action_text = literal(action) if isinstance(action, ast.Constant) else ast.unparse(action) if action else None
        if "default" in kw:
            dflt = kw["default"]
            # `default=ServerArgs.x`: the field's own default
            if isinstance(dflt, ast.Attribute) and isinstance(dflt.value, ast.Name) and dflt.attr in fields:
                default = fields[dflt.attr].default
            else:
                default = constant(dflt)
        else:
            default = False if action_text == "store_true" else True if action_text == "store_false" else None
        type_text: str | None
        if action_text in ("store_true", "store_false"):
            type_text = "bool"
        elif "type" in kw:
            type_text = ast.unparse(kw["type"])
        else:
            type_text = None if action_text else "str"
        out.append(Flag(
            name=names[0], aliases=names[1:], type=type_text, default=default,
            choices=resolve_choices(tree, relpath, kw.get("choices")), relpath=relpath, node=node,
            style="add_argument", dest=str(dest), action=action_text,
            nargs=literal(kw["nargs"]) if "nargs" in kw else None,
        ))
    return out


def _annotated_flag(tree: EngineTree, decl: FieldDecl) -> Flag | None:
    meta = decl.meta
    if meta is None or literal(meta.get("no_cli")) is True:
        return None
    name = literal(meta["cli_name"]) if "cli_name" in meta else "--" + decl.name.replace("_", "-")
    aliases = literal(meta.get("aliases")) or []
    assert decl.inner_type is not None  # _fields_of sets it on every field
    inner = _unwrap_optional(decl.inner_type)
    choices = resolve_choices(tree, decl.relpath, meta.get("choices"))
    action = ast.unparse(meta["action"]) if "action" in meta else None
    nargs = literal(meta["nargs"]) if "nargs" in meta else None
    head = _subscript_head(inner)
    type_text = ast.unparse(meta["type_parser"]) if "type_parser" in meta else ast.unparse(inner)
    if action is None and head == "Literal" and isinstance(inner, ast.Subscript):  # (a head is a subscript's)
        values = inner.slice.elts if isinstance(inner.slice, ast.Tuple) else [inner.slice]
        choices = choices if choices is not None else [literal(v) for v in values]
        type_text = type(choices[0]).__name__ if choices and "type_parser" not in meta else type_text
    elif action is None and head in ("List", "list") and "type_parser" not in meta and isinstance(inner, ast.Subscript):
        type_text, nargs = ast.unparse(inner.slice), nargs or "+"
    elif action is None and isinstance(inner, ast.Name) and inner.id == "bool":
        action, type_text = "store_true", "bool"
    style = "msgspec_namespace" if decl.namespace is not None else "annotated_dataclass"
    return Flag(
        name=name, aliases=list(aliases) if isinstance(aliases, (list, tuple)) else [str(aliases)], type=type_text,
        default=decl.default, choices=choices, relpath=decl.relpath, node=decl.node, style=style, dest=decl.name,
        action=action, nargs=nargs,
    )


def _build(tree: EngineTree) -> ServerArgsSource | None:
    if tree.exists(SERVER_ARGS_HOME):
        fast = _build_from_pieces(tree, SERVER_ARGS_HOME)
        if fast is not None:
            return fast
        # parsed whole (slow, ~50 ms) so that a file this Python cannot parse is reported, not skipped
        cls = top_level_classes(tree.parse(SERVER_ARGS_HOME)).get("ServerArgs")
        if cls is not None:
            return _build_from_class(tree, SERVER_ARGS_HOME, cls)
    found = find_class(tree, "ServerArgs", under="sglang/srt")
    return _build_from_class(tree, *found) if found else None


def every_flag(tree: EngineTree) -> ServerArgsSource | None:
    """Every flag of `python -m sglang.launch_server` (prepare_server_args: an argparse parser that
    ServerArgs.add_cli_args fills), not only the speculative ones: server_args.py parsed whole."""
    return memo_on_tree(tree, "server_args_every_flag", _build_every)


def _build_every(tree: EngineTree) -> ServerArgsSource | None:
    found = ((SERVER_ARGS_HOME, top_level_classes(tree.parse(SERVER_ARGS_HOME)).get("ServerArgs"))
             if tree.exists(SERVER_ARGS_HOME) else find_class(tree, "ServerArgs", under="sglang/srt"))
    if found is None or found[1] is None:
        return None
    return _build_from_class(tree, found[0], found[1], every=True)


def _build_from_class(tree: EngineTree, relpath: str, cls: ast.ClassDef, every: bool = False) -> ServerArgsSource:
    module = tree.parse(relpath)
    source = ServerArgsSource(relpath, cls.lineno)
    source.fields = _fields_of(tree, relpath, cls, None)
    source.namespaces = _namespaces(tree, [n.module for n in _module_level(module.body)
                                           if isinstance(n, ast.ImportFrom) and n.module], every)
    add_cli_args = methods(cls).get("add_cli_args")
    calls = [n for n in ast.walk(add_cli_args or module) if _is_add_argument(n)]
    return _finish(tree, source, calls, every)


def _finish(tree: EngineTree, source: ServerArgsSource, calls: list[ast.Call], every: bool = False) -> ServerArgsSource:
    for path, ns_relpath, ns_cls in source.namespaces:
        source.fields.extend(f for f in _fields_of(tree, ns_relpath, ns_cls, path) if every or is_speculative(f.name))
    by_name = {f.name: f for f in source.fields}
    source.flags = _add_argument_flags(tree, source.relpath, calls, by_name)
    explicit = {f.dest for f in source.flags}
    for decl in source.fields:
        flag = _annotated_flag(tree, decl)
        if flag is not None and flag.dest not in explicit:
            source.flags.append(flag)
    return source


# -- reading server_args.py in pieces ------------------------------------------------------
# server_args.py runs to 360 KB (6000 lines) up to 0.5.19; parsing it whole is most of a
# report's time. The speculative fields and add_argument calls are found by bytes and only
# those statements are parsed. Anything unexpected falls back to the whole-file parse.
_SPEC_BYTES = tuple(w.encode() for w in SPEC_WORDS)
_SPEC_FIELD = re.compile(rb"\n[ \t]+\w*(?:%s)\w*[ \t]*:" % b"|".join(_SPEC_BYTES))
_IMPORT_FROM = re.compile(rb"\n[ \t]*from[ \t]+(sglang[\w.]*)[ \t]+import")


class _Lines:
    """Line numbers of increasing offsets, counted incrementally."""

    def __init__(self, data: bytes):
        self.data, self.offset, self.line = data, 0, 1

    def __call__(self, offset: int) -> int:
        if offset < self.offset:
            self.offset, self.line = 0, 1
        self.line += self.data.count(b"\n", self.offset, offset)
        self.offset = offset
        return self.line


@functools.lru_cache(maxsize=None)
def _next_statement(indent: int) -> re.Pattern:
    """A line indented at most `indent` that is not a closing bracket: the next statement there."""
    return re.compile(rb"\n[ \t]{0,%d}[^\s)\]}]" % indent)


def _statement_at(data: bytes, start: int, line: int, max_lines: int = 120) -> ast.stmt | None:
    """The statement whose first line starts at `start`: up to the next line at its indentation or less,
    else (a multi-line string at column 0, say) grown a line at a time until it parses."""
    indent = len(data[start:start + 200]) - len(data[start:start + 200].lstrip(b" \t"))
    m = _next_statement(indent).search(data, start + indent + 1)
    node = parse_piece(data, start, m.start() + 1 if m else len(data), line)
    if node is not None:
        return node
    end = start
    for _ in range(max_lines):
        nl = data.find(b"\n", end)
        end = len(data) if nl < 0 else nl + 1
        node = parse_piece(data, start, end, line)
        if node is not None or end >= len(data):
            return node
    return None


class _Fallback(Exception):
    pass


def _build_from_pieces(tree: EngineTree, relpath: str) -> ServerArgsSource | None:
    data = tree.read_bytes(relpath)
    m = re.search(rb"(?:^|\n)(class[ \t]+ServerArgs\b[^\n]*)\n", data)
    if m is None:
        return None
    lines = _Lines(data)
    start = m.start(1)
    end = top_level_end(data, start)
    body = re.compile(rb"\n([ \t]+)[^\s#]").search(data, m.end() - 1, end)
    if body is None:
        return None
    indent = body.group(1)
    try:
        source = ServerArgsSource(relpath, lines(start))
        # fields: `    name: ...` at the class body's indentation, speculative names only
        for fm in re.finditer(rb"\n" + re.escape(indent) + rb"(\w+)[ \t]*:", data[:end]):
            if fm.start() < m.end() - 1 or not is_speculative(fm.group(1).decode()):
                continue
            node = _statement_at(data, fm.start() + 1, lines(fm.start() + 1))
            if not isinstance(node, ast.AnnAssign):
                raise _Fallback
            source.fields.extend(_fields_of(tree, relpath, ast.ClassDef("ServerArgs", [], [], [node], []), None))
        # add_argument calls inside add_cli_args whose text mentions a speculative word
        calls: list[ast.Call] = []
        dm = re.compile(rb"\n" + re.escape(indent) + rb"def add_cli_args\b").search(data, m.end() - 1, end)
        if dm is not None:
            method_end_m = re.compile(rb"\n" + (rb"[ \t]{0,%d}" % len(indent)) + rb"[^\s#)\]}]").search(data, dm.end(), end)
            method_end = method_end_m.start() if method_end_m else end
            pos = data.find(b".add_argument(", dm.end(), method_end)
            while pos >= 0:
                window = data[pos:pos + 500]
                if any(w in window for w in _SPEC_BYTES):
                    line_start = data.rfind(b"\n", 0, pos) + 1
                    node = _statement_at(data, line_start, lines(line_start))
                    found = [n for n in ast.walk(node) if _is_add_argument(n)] if node is not None else []
                    if not found:
                        raise _Fallback
                    calls.extend(found)
                pos = data.find(b".add_argument(", pos + 1, method_end)
    except _Fallback:
        return None
    source.namespaces = _namespaces(tree, [im.group(1).decode() for im in _IMPORT_FROM.finditer(data)])
    return _finish(tree, source, calls)


def style_of(source: ServerArgsSource) -> str:
    spec_fields = [f for f in source.fields if is_speculative(f.name)]
    if any(f.namespace is not None for f in spec_fields):
        return "msgspec_namespace"
    if any(f.meta is not None for f in spec_fields):
        return "annotated_dataclass"
    return "add_argument"
