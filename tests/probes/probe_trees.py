"""Small fake engine trees written by the probe tests (a uniquely named module: no conftest clash)."""

from __future__ import annotations

import textwrap

from compat.sources import open_path


def write_tree(root, engine: str, files: dict[str, str], *, strip_first_newline: bool = False):
    """`<engine>/__init__.py` plus the given files (paths relative to root), as an EngineTree.

    strip_first_newline: drop the newline that opens a triple-quoted snippet, so a test can
    count the snippet's lines from 1.
    """
    (root / engine).mkdir(parents=True, exist_ok=True)
    (root / engine / "__init__.py").write_text("")
    for relpath, text in files.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        text = textwrap.dedent(text)
        path.write_text(text.lstrip("\n") if strip_first_newline else text)
    return open_path(root)


def line(text: str, marker: str) -> int:
    """1-based line of the first line holding `marker`, as write_tree(strip_first_newline=True) lays it out."""
    lines = textwrap.dedent(text).lstrip("\n").splitlines()
    return next(i for i, text_line in enumerate(lines, 1) if marker in text_line)
