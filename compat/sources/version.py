"""An engine's version read from its own files (for --path trees, which have no metadata)."""

from __future__ import annotations

import ast
from pathlib import Path

# Where each engine writes its version: setuptools-scm's _version.py, or a plain version.py.
_VERSION_FILES = {
    "vllm": ("vllm/_version.py", "vllm/version.py"),
    "sglang": ("sglang/version.py", "sglang/_version.py"),
}


def version_from_source(root: Path, engine: str) -> str | None:
    for rel in _VERSION_FILES[engine]:
        path = Path(root) / rel
        if not path.is_file():
            continue
        try:
            module = ast.parse(path.read_bytes())
        except SyntaxError:
            continue
        for node in module.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            # _version.py: `__version__ = version = '0.11.0'`
            if names & {"__version__", "version"} and isinstance(getattr(node, "value", None), ast.Constant):
                if isinstance(node.value.value, str):
                    return node.value.value
    return _version_from_dist_info(Path(root), engine)


def _version_from_dist_info(root: Path, engine: str) -> str | None:
    """A site-packages folder: the dist-info of the distribution that owns the package."""
    for info in sorted(root.glob("*.dist-info")):
        name = info.name.split("-")[0].lower().replace("_", "-")
        if name == engine or (engine == "vllm" and name.startswith("vllm")):
            top = info / "top_level.txt"
            if top.is_file() and engine not in top.read_text().split():
                continue
            return info.name[: -len(".dist-info")].split("-", 1)[1]
    return None
