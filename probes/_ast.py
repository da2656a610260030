"""Small AST helpers shared by the probes of both engines.

Everything here is tolerant: engine code moves and gets renamed between releases, so
helpers return None/empty rather than raising when something is not where expected.
"""

from __future__ import annotations

import ast
from typing import Iterable, Iterator

from compat.tree import EngineTree, UnparseableFile


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


def decorator_names(node: ast.ClassDef | ast.FunctionDef) -> list[str]:
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
