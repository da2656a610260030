"""An engine's version as its own files declare it (for --path trees, which have no metadata).

Where each engine writes its version is a field of its unit (compat/engines/: VERSION_FILES, read through
`version_files`); it and `version_assignment` are also what the `version_in_source` probes read, so the
tree's version and the reported fact can never disagree.
"""

from __future__ import annotations

import ast
from pathlib import Path

from compat import engines

_NAMES = {"__version__", "version"}


def version_assignment(module: ast.Module) -> tuple[str, ast.stmt] | None:
    """(version, statement) for a top-level `__version__ = version = '0.11.0'`, if there is one."""
    for stmt in module.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        value = getattr(stmt, "value", None)
        if {t.id for t in targets if isinstance(t, ast.Name)} & _NAMES and isinstance(value, ast.Constant):
            if isinstance(value.value, str):
                return value.value, stmt
    return None


def version_files(engine: str) -> tuple[str, ...]:
    """Where `engine` writes its version (setuptools-scm's _version.py, or a plain version.py), first found wins."""
    return engines.get(engine).version_files


def version_from_source(root: Path, engine: str) -> str | None:
    for rel in version_files(engine):
        path = Path(root) / rel
        if not path.is_file():
            continue
        try:
            found = version_assignment(ast.parse(path.read_bytes()))
        except SyntaxError:
            continue
        if found:
            return found[0]
    return _version_from_dist_info(Path(root), engine)


def _version_from_dist_info(root: Path, engine: str) -> str | None:
    """A site-packages folder: the dist-info of the distribution that owns the package."""
    unit = engines.get(engine)
    for info in sorted(root.glob("*.dist-info")):
        name = info.name.split("-")[0].lower().replace("_", "-")
        if unit.owns_distribution(name):
            top = info / "top_level.txt"
            if top.is_file() and engine not in top.read_text().split():
                continue
            return info.name[: -len(".dist-info")].split("-", 1)[1]
    return None
