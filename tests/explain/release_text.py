"""Text modelled from a release's own source, for the explain tests that cannot run the engine (SGLang, other
releases): a traceback whose frames are the release's real files, lines, functions and code, and a message rendered
from the release's own template. Said so in each test that uses them."""

from __future__ import annotations

import ast
from functools import lru_cache

from compat.explain.sites import Site

SITE_PACKAGES = "/opt/venv/lib/python3.12/site-packages"


@lru_cache(maxsize=None)
def _functions(tree, relpath: str) -> list[tuple[int, int, str]]:
    spans = []

    def walk(node, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                spans.append((child.lineno, child.end_lineno or child.lineno, child.name))
                walk(child, scope + (child.name,))
            elif isinstance(child, ast.ClassDef):
                walk(child, scope + (child.name,))
            else:
                walk(child, scope)

    walk(ast.parse(tree.text(relpath)), ())
    return spans


def function_at(tree, relpath: str, line: int) -> str:
    inside = [(start, name) for start, end, name in _functions(tree, relpath) if start <= line <= end]
    return max(inside)[1] if inside else "<module>"


def line_of(tree, relpath: str, needle: str, after: int = 0) -> int:
    lines = tree.text(relpath).splitlines()
    return next(i for i, text in enumerate(lines, 1) if i > after and needle in text)


def frame(tree, relpath: str, line: int) -> list[str]:
    """One frame as Python prints it: the file under site-packages, the line, the function, the code."""
    code = tree.text(relpath).splitlines()[line - 1].strip()
    return [f'  File "{SITE_PACKAGES}/{relpath}", line {line}, in {function_at(tree, relpath, line)}', f"    {code}"]


def traceback(tree, calls: list[tuple[str, str]], raised_at: tuple[str, int] | None, exception: str) -> list[str]:
    """`Traceback (most recent call last):`, a frame for each (file, code needle) call in order, the raise's frame
    (file, line) when given, and the exception line."""
    lines = ["Traceback (most recent call last):"]
    for relpath, needle in calls:
        lines += frame(tree, relpath, line_of(tree, relpath, needle))
    if raised_at is not None:
        lines += frame(tree, *raised_at)
    return lines + exception.split("\n")


def render(site: Site, *values: str) -> str:
    """The site's template with its holes filled in order (what the engine would print)."""
    parts = site.template.split("{}")
    out = parts[0]
    for i, part in enumerate(parts[1:]):
        out += (values[i] if i < len(values) else "x") + part
    return out


def site_of(index, needle: str, kind: str | None = None) -> Site:
    """The one site whose template holds `needle` (of `kind`)."""
    found = [s for s in index.sites if needle in s.template and (kind is None or s.kind == kind)]
    assert found, f"no site of the release holds {needle!r}"
    return found[0]
