"""The release the user named: one value, and the words every `compat ...` line compat prints names it with.

A release is named three ways: installed in an interpreter (`--engine vllm`, `--python PY` for another one),
from the package index (`--engine vllm==0.16.0`), or a source tree (`--path DIR`). doctor, explain, verify and
the matrix print commands that name it again (`compat patch`, `compat plugin install`, `compat convert ckpt`,
`compat doctor`, `compat explain`, `compat env`); `ReleaseRef.args(command)` gives their words, here once:

- a command that reads a release (convert, doctor, explain, probe) names the same one: the tree by --path, the
  installed engine by --engine and its interpreter, a release of the index by ENGINE==VERSION;
- a command that changes the serving environment (patch, env) names the installed engine, never a release of the
  index (a fetched release is a shared cache: `compat patch` only previews it): --engine ENGINE and the serving
  venv's --python when it is known, a tree by --path;
- `compat plugin install` names the engine, the tree the interpreter imports when it is one, and the interpreter.

`python` is the serving venv's interpreter: the one an installed engine was found in, else the one the user named
beside a release or a tree (`doctor --python`), else None (not known: the line leaves it out, and doctor says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

INSTALLED, INDEX, TREE = "installed", "index", "tree"
READS = ("convert", "doctor", "explain", "probe", "verify")
CHANGES = ("patch", "env")
PYTHON_PLACEHOLDER = "PY"  # `compat env --python PY`: the serving venv's python, when compat does not know it


@dataclass(frozen=True)
class ReleaseRef:
    engine: str
    version: str | None  # the release's version, when known
    source: str  # INSTALLED | INDEX | TREE
    python: str | None = None  # the serving venv's interpreter (see above)
    path: str | None = None  # TREE: the directory holding the engine's package

    @classmethod
    def of_source(cls, engine: str, version: str | None, source: dict[str, Any] | None,
                  python: str | None = None) -> ReleaseRef:
        """From a probe report's `source` (compat.core.tree.SourceInfo's JSON) and the serving interpreter, if known:
        an installed engine's own interpreter wins (it is the one that serves it)."""
        source = source or {}
        kind = source.get("kind")
        if kind == "path":
            return cls(engine, version, TREE, python, source.get("location"))
        if kind == "installed":
            return cls(engine, version, INSTALLED, source.get("python") or python)
        return cls(engine, version, INDEX, python)

    @classmethod
    def of_tree(cls, tree: Any, python: str | None = None) -> ReleaseRef:
        """From an EngineTree (and the serving interpreter the user named, for a release or a tree)."""
        return cls.of_source(tree.engine, tree.version, tree.source.to_json(), python)

    @classmethod
    def installed(cls, engine: str, python: str | None, version: str | None = None) -> ReleaseRef:
        return cls(engine, version, INSTALLED, python)

    @classmethod
    def released(cls, engine: str, version: str | None) -> ReleaseRef:
        return cls(engine, version, INDEX)

    def args(self, command: str) -> list[str]:
        """The words after `compat <command>` that name this release (see the module's docstring)."""
        if command == "plugin":
            return (["--engine", self.engine] + (["--path", self.path] if self.source == TREE and self.path else [])
                    + (["--python", self.python] if self.python else []))
        if command == "env":
            return ["--python", self.python or PYTHON_PLACEHOLDER]
        if self.source == TREE and self.path:
            return ["--path", self.path]
        if command in CHANGES or self.source == INSTALLED or not self.version:
            with_python = command in CHANGES or self.source == INSTALLED
            return ["--engine", self.engine] + (["--python", self.python] if self.python and with_python else [])
        if command in READS:
            return ["--engine", f"{self.engine}=={self.version}"]
        raise ValueError(f"no words for `compat {command}`")

    def spec(self) -> str:
        """`vllm==0.16.0` (the release), or `vllm` (the installed one, or a version not known)."""
        return f"{self.engine}=={self.version}" if self.version and self.source == INDEX else self.engine

    def range_args(self, releases: str) -> list[str]:
        """`--engine ENGINE --releases RANGE`: other releases of this engine (`compat doctor --releases`)."""
        return ["--engine", self.engine, "--releases", releases]
