"""An engine's Python source on disk: the one thing probes, patches and doctor read.

Whatever the source (installed in a venv, a release fetched from the index, a checkout),
it ends up as an `EngineTree`: a directory holding the engine's top-level package (`vllm/`,
`sglang/`), plus where it came from; which engines there are is not known here (compat/engines/ says).
Reads are cached per tree, so many probes asking about the same file cost one read and one parse.

Speed matters (a probe of a whole release must stay well under a second), so nothing
here parses a file until asked: `grep` is a byte search over the files of a folder, and
probes parse only the handful of files that mention what they look for.
"""

from __future__ import annotations

import ast
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType

@dataclass(frozen=True)
class SourceInfo:
    """Where a tree came from, as reported under `source` in `compat probe --json`."""

    kind: str  # "installed" | "released" | "path"
    location: str  # the directory holding the package (and, for releases, the artifact)
    detail: dict = field(default_factory=dict)  # e.g. {"python": ..., "distribution": ..., "artifact": ...}

    def to_json(self) -> dict:
        return {"kind": self.kind, "location": self.location, **self.detail}


class UnparseableFile(Exception):
    """A file the running Python cannot parse (newer syntax, or broken)."""

    def __init__(self, relpath: str, err: SyntaxError):
        self.relpath = relpath
        self.lineno = err.lineno
        super().__init__(f"{relpath}:{err.lineno}: cannot parse with this Python ({err.msg})")


class EngineTree:
    def __init__(self, engine: str, root: Path, version: str | None, source: SourceInfo):
        self.engine = engine  # the engine's name, which is also its package's: root/<engine>/__init__.py
        self.root = Path(root)
        self._root_str = str(self.root)
        self.version = version
        self.source = source
        self._bytes: dict[str, bytes] = {}
        self._ast: dict[str, ast.Module] = {}

    def __repr__(self) -> str:
        return f"EngineTree({self.engine} {self.version or '?'} at {self.root})"

    def overlay(self, changes: dict[str, bytes]) -> "EngineTree":
        """A view of this tree in which `changes` (relpath -> bytes) replace the files' contents.

        Nothing is written: doctor probes a patched release this way before offering the patch.
        Unchanged files share this tree's cached bytes and syntax trees.
        """
        view = EngineTree(self.engine, self.root, self.version, self.source)
        view._bytes = {**self._bytes, **changes}
        view._ast = {k: v for k, v in self._ast.items() if k not in changes}
        return view

    # -- files ---------------------------------------------------------------------------
    @cached_property
    def _all_files(self) -> list[str]:
        out: list[str] = []
        base = self.root / self.engine
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            rel = Path(dirpath).relative_to(self.root).as_posix()
            out.extend(f"{rel}/{name}" for name in sorted(filenames) if name.endswith(".py"))
        return out

    def files(self, under: str = "") -> list[str]:
        """Relative paths (`vllm/config/speculative.py`) of the .py files below `under`."""
        if not under:
            return list(self._all_files)
        prefix = under.rstrip("/") + "/"
        return [f for f in self._all_files if f.startswith(prefix) or f == under]

    def exists(self, relpath: str) -> bool:
        return (self.root / relpath).is_file()

    def path(self, relpath: str) -> Path:
        return self.root / relpath

    def read_bytes(self, relpath: str) -> bytes:
        data = self._bytes.get(relpath)
        if data is None:
            # Plain string paths: pathlib costs ~20 ms per 1000 files, a probe budget item.
            with open(os.path.join(self._root_str, relpath), "rb") as fh:
                data = fh.read()
            self._bytes[relpath] = data
        return data

    def text(self, relpath: str) -> str:
        return self.read_bytes(relpath).decode("utf-8", errors="replace")

    def grep(self, needle: str | bytes, under: str = "") -> list[str]:
        """Files below `under` whose bytes contain `needle` (a plain substring, no regex)."""
        raw = needle.encode() if isinstance(needle, str) else needle
        return [f for f in self.files(under) if raw in self.read_bytes(f)]

    def grep_re(self, pattern: str, under: str = "") -> list[str]:
        rx = re.compile(pattern.encode())
        return [f for f in self.files(under) if rx.search(self.read_bytes(f))]

    # -- syntax --------------------------------------------------------------------------
    def parse(self, relpath: str) -> ast.Module:
        """The module's AST; raises UnparseableFile when this Python cannot parse it."""
        tree = self._ast.get(relpath)
        if tree is None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # invalid escape sequences in engine code
                    tree = ast.parse(self.read_bytes(relpath), filename=relpath)
            except SyntaxError as err:
                raise UnparseableFile(relpath, err) from None
            self._ast[relpath] = tree
        return tree

    # -- what the tree holds in memory ----------------------------------------------------
    def in_memory(self) -> Mapping[str, bytes] | None:
        """relpath -> the bytes this tree answers with for each file it has read, parsed or been given by
        `overlay` (a read-only view); None when it holds a syntax tree without the bytes it was parsed
        from, so what its answers rest on cannot be told from bytes."""
        if any(relpath not in self._bytes for relpath in self._ast):
            return None
        return MappingProxyType(self._bytes)

    def pristine(self) -> bool:
        """Nothing read, parsed or overlaid yet: whatever it answers next comes from its files alone."""
        return not self._bytes and not self._ast

    def loc(self, relpath: str, node: ast.AST | int | None = None) -> str:
        """`file:line` for a fact; every fact in a report carries one."""
        line = node if isinstance(node, int) else getattr(node, "lineno", None)
        return f"{relpath}:{line}" if line else relpath


def find_package_root(directory: Path, candidates: tuple[str, ...] | list[str]) -> tuple[str, Path]:
    """(engine, root) for a directory that holds one of the `candidates` packages (`vllm/`, `sglang/`).

    Also accepted, because users point at them: the package folder itself
    (`.../site-packages/vllm`) and an SGLang checkout (`python/sglang`). Raises
    ValueError with what was looked for when nothing matches.
    """
    directory = Path(directory)
    for name in candidates:
        for root in (directory, directory / "python"):
            if (root / name / "__init__.py").is_file():
                return name, root
        if directory.name == name and (directory / "__init__.py").is_file():
            return name, directory.parent
    looked = " or ".join(f"{n}/__init__.py" for n in candidates)
    raise ValueError(f"{directory} is not an engine source tree: no {looked} in it")
