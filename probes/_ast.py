"""Small AST helpers shared by the probes of both engines.

Everything here is tolerant: engine code moves and gets renamed between releases, so
helpers return None/empty rather than raising when something is not where expected.
"""

from __future__ import annotations

import ast
import re as _re
import weakref
from typing import Iterable, Iterator, overload

from compat.core.tree import EngineTree, UnparseableFile


@overload
def unparse(node: ast.AST) -> str: ...
@overload
def unparse(node: None) -> None: ...
@overload
def unparse(node: ast.AST | None) -> str | None: ...
def unparse(node: ast.AST | None) -> str | None:
    return None if node is None else ast.unparse(node)


def literal(node: ast.AST | None):
    """The Python value of a literal node (list of strings, number, ...), else its source text."""
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node)


def base_names(cls: ast.ClassDef) -> list[str]:
    """Base class names as written, without module prefix or subscripts (`Generic[T]` -> `Generic`)."""
    out = []
    for base in cls.bases:
        while isinstance(base, ast.Subscript):
            base = base.value
        if isinstance(base, ast.Name):
            out.append(base.id)
        elif isinstance(base, ast.Attribute):
            out.append(base.attr)
    return out


def decorator_names(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    out = []
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Name):
            out.append(target.id)
        elif isinstance(target, ast.Attribute):
            out.append(target.attr)
    return out


def top_level_classes(module: ast.Module) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in module.body if isinstance(n, ast.ClassDef)}


def methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def class_fields(cls: ast.ClassDef) -> Iterator[ast.AnnAssign]:
    """Annotated class attributes (dataclass/pydantic/msgspec fields), skipping ClassVar."""
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if "ClassVar" in ast.unparse(stmt.annotation):
                continue
            yield stmt


def field_name(stmt: ast.AnnAssign) -> str:
    """The name of a field `class_fields` yields (its target is a plain name)."""
    return stmt.target.id if isinstance(stmt.target, ast.Name) else ast.unparse(stmt.target)


def safe_parse(tree: EngineTree, relpath: str) -> ast.Module | None:
    """Parse, or None when the file is missing or unparseable (callers record why separately)."""
    if not tree.exists(relpath):
        return None
    try:
        return tree.parse(relpath)
    except UnparseableFile:
        return None


def find_class(tree: EngineTree, name: str, prefer: Iterable[str] = (), under: str = "") -> tuple[str, ast.ClassDef] | None:
    """Where `class name` is defined: first in the `prefer` files, then anywhere below `under`.

    Classes move between files across releases, so callers give the usual homes in
    `prefer` and the search falls back to a byte grep for `class name(` / `class name:`.
    """
    needle_paren, needle_colon = f"class {name}(".encode(), f"class {name}:".encode()
    seen = set()
    candidates = [p for p in prefer if tree.exists(p)]
    for relpath in candidates + tree.files(under or tree.engine):
        if relpath in seen:
            continue
        seen.add(relpath)
        data = tree.read_bytes(relpath)
        if needle_paren not in data and needle_colon not in data:
            continue
        module = safe_parse(tree, relpath)
        if module is None:
            continue
        cls = top_level_classes(module).get(name)
        if cls is not None:
            return relpath, cls
    return None


def walk_functions(node: ast.AST, name: str) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for sub in ast.walk(node):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name == name:
            yield sub


def assignments(node: ast.AST, name: str) -> Iterator[ast.Assign | ast.AnnAssign]:
    """Every `name = ...` / `name: T = ...` anywhere inside `node`."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in sub.targets):
                yield sub
        elif isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name) and sub.target.id == name:
            if sub.value is not None:
                yield sub


# -- block-level helpers (appended for the vLLM probes) ---------------------------------------
# Some engine files are huge (vLLM's gpu_model_runner.py is ~300 KB, 75 ms to parse); a probe
# that needs one function or one class header parses just that slice, and falls back to the
# whole file only when the slice does not parse on its own.



def source_segment(tree: EngineTree, relpath: str, node: ast.expr | ast.stmt) -> str | None:
    """The exact source text of `node` (as written, unlike `ast.unparse`), or None."""
    if getattr(node, "end_lineno", None) is None:
        return None
    lines = tree.text(relpath).split("\n")[node.lineno - 1 : node.end_lineno]
    if not lines:
        return None
    if len(lines) == 1:
        return lines[0][node.col_offset : node.end_col_offset]
    lines[-1] = lines[-1][: node.end_col_offset]
    lines[0] = lines[0][node.col_offset :]
    return "\n".join(lines)


def header_end(data: bytes, start: int) -> int:
    """Offset just past the `:` that ends a def/class header starting at `start` (brackets balanced)."""
    # Fast path (C-level finds and counts): the first `:` with balanced brackets before it and
    # no comment in between; anything unusual goes through the scanner below.
    colon = data.find(b":", start)
    if colon >= 0:
        head = data[start:colon]
        if b"#" not in head and b"'" not in head and b'"' not in head:
            opened = head.count(b"(") + head.count(b"[") + head.count(b"{")
            closed = head.count(b")") + head.count(b"]") + head.count(b"}")
            if opened == closed:
                return colon + 1
    depth = 0
    i, n = start, len(data)
    while i < n:
        c = data[i]
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
        elif c == 0x3A and depth == 0:  # ':'
            return i + 1
        elif c == 0x23:  # '#': skip a comment
            j = data.find(b"\n", i)
            i = n if j < 0 else j
            continue
        i += 1
    return n


def block_end(data: bytes, body_start: int, indent: int) -> int:
    """Offset where an indented block that starts at `body_start` ends (first line indented <= indent)."""
    pos = data.find(b"\n", body_start)
    if pos < 0:
        return len(data)
    pos += 1
    n = len(data)
    while pos < n:
        end = data.find(b"\n", pos)
        end = n if end < 0 else end
        line = data[pos:end]
        stripped = line.lstrip(b" \t")
        if stripped.rstrip(b"\r") and not stripped.startswith(b"#") and len(line) - len(stripped) <= indent:  # CRLF
            return pos
        pos = end + 1
    return n


def find_def(tree: EngineTree, relpath: str, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The first `def name(...)` in the file (any nesting), parsed from its own slice when possible.

    Line numbers are those of the file. Raises UnparseableFile only when the slice does not
    parse and the whole file does not either.
    """
    return _find_block(tree, relpath, name, "def")


def find_classdef(tree: EngineTree, relpath: str, name: str) -> ast.ClassDef | None:
    """The first `class name` in the file, parsed from its own slice when possible (see find_def)."""
    return _find_block(tree, relpath, name, "class")


def _find_block(tree: EngineTree, relpath: str, name: str, keyword: str):
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef) if keyword == "def" else (ast.ClassDef,)
    data = tree.read_bytes(relpath)
    needle = f"{keyword} {name}".encode()
    pos = data.find(needle)
    while pos >= 0:
        line_start = data.rfind(b"\n", 0, pos) + 1
        prefix = data[line_start:pos]
        after = data[pos + len(needle):pos + len(needle) + 1]
        if prefix.strip(b" \t") in (b"", b"async") and after in (b"(", b":", b" ", b"["):
            break
        pos = data.find(needle, pos + 1)
    if pos < 0:
        return None
    indent = len(prefix) - len(prefix.lstrip(b" \t"))
    end = block_end(data, header_end(data, pos), indent)
    lines = data[line_start:end].decode("utf-8", errors="replace").split("\n")
    snippet = "\n".join(line[indent:] if line[:indent].strip() == "" else line for line in lines)
    try:
        module = ast.parse(snippet)
        node = module.body[0]
        if not isinstance(node, kinds) or node.name != name:
            raise SyntaxError("slice is not the block")
    except SyntaxError:
        full = tree.parse(relpath)
        return next((n for n in ast.walk(full) if isinstance(n, kinds) and n.name == name), None)
    ast.increment_lineno(node, data.count(b"\n", 0, line_start))
    return node


class ClassHeader:
    """A class statement's header (`class Name(bases):`) found by a byte scan, not yet parsed."""

    __slots__ = ("name", "raw", "offset", "_data", "_lineno", "_bases")

    def __init__(self, name: str, raw: bytes, offset: int, data: bytes):
        self.name, self.raw, self.offset, self._data = name, raw, offset, data
        self._lineno: int | None = None
        self._bases: list[str] | None = None

    @property
    def lineno(self) -> int:
        """1-based line of the `class` keyword (counted on demand: most headers are never reported)."""
        if self._lineno is None:
            self._lineno = self._data.count(b"\n", 0, self.offset) + 1
        return self._lineno

    @property
    def bases(self) -> list[str]:
        """Base class names (ast of the header alone; [] when the header does not parse)."""
        if self._bases is None:
            try:
                cls = ast.parse(self.raw.decode("utf-8", errors="replace") + "\n    pass\n").body[0]
                self._bases = base_names(cls) if isinstance(cls, ast.ClassDef) else []
            except SyntaxError:
                self._bases = []
        return self._bases

    def __repr__(self) -> str:
        return f"ClassHeader({self.name} line {self.lineno})"


_CLASS_NAME = _re.compile(rb"class[ \t]+([A-Za-z_]\w*)")


_HEADERS: "weakref.WeakKeyDictionary[EngineTree, dict[str, list[ClassHeader]]]" = weakref.WeakKeyDictionary()


def class_headers(tree: EngineTree, relpath: str) -> list[ClassHeader]:
    """Top-level class headers of a file, in order, without parsing the file (kept per tree: several probes ask)."""
    memo = _HEADERS.setdefault(tree, {})
    if relpath not in memo:
        memo[relpath] = _class_headers(tree, relpath)
    return memo[relpath]


def _class_headers(tree: EngineTree, relpath: str) -> list[ClassHeader]:
    data = tree.read_bytes(relpath)
    out: list[ClassHeader] = []
    pos = 0 if data.startswith(b"class ") else data.find(b"\nclass ")
    while pos >= 0:
        start = pos if data.startswith(b"class ", pos) else pos + 1
        m = _CLASS_NAME.match(data, start)
        if m:
            raw = data[start:header_end(data, start)]
            out.append(ClassHeader(m.group(1).decode(), raw, start, data))
        pos = data.find(b"\nclass ", start + 1)
    return out


def find_class_field(tree: EngineTree, relpath: str, class_name: str, field_name: str) -> ast.AnnAssign | None:
    """`field_name: T = default` in the body of top-level `class class_name`, parsed on its own
    (a config class can be thousands of lines; one annotated statement is all a caller needs)."""
    data = tree.read_bytes(relpath)
    header = next((h for h in class_headers(tree, relpath) if h.name == class_name), None)
    if header is None:
        return None
    body_start = header.offset + len(header.raw)
    end = block_end(data, body_start, 0)
    needle = f"{field_name}:".encode()
    pos = data.find(needle, body_start, end)
    while pos >= 0:
        line_start = data.rfind(b"\n", 0, pos) + 1
        prefix = data[line_start:pos]
        if prefix.strip(b" \t") == b"" and prefix:  # indented: a statement of the class body
            lines = data[line_start:end].decode("utf-8", errors="replace").split("\n")
            for count in range(1, min(len(lines), 12) + 1):
                try:
                    stmt = ast.parse("\n".join(line[len(prefix):] for line in lines[:count])).body[0]
                except SyntaxError:
                    continue
                if isinstance(stmt, ast.AnnAssign):
                    ast.increment_lineno(stmt, data.count(b"\n", 0, line_start))
                    return stmt
                break
        pos = data.find(needle, pos + 1, end)
    return None


def version_in_source(tree: EngineTree) -> dict:
    """The `version_in_source` fact of either engine: the literal version its own files assign."""
    from compat.sources.version import version_assignment, version_files

    files = version_files(tree.engine)
    for relpath in files:
        module = safe_parse(tree, relpath)
        found = module and version_assignment(module)
        if found:
            return {"present": True, "version": found[0], "location": tree.loc(relpath, found[1])}
    return {"present": False, "reason": "no literal __version__ in " + " or ".join(files)}
