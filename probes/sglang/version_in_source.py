"""The version SGLang's own files declare: sglang/version.py, or setuptools-scm's _version.py (0.5.7+)."""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes._ast import safe_parse
from compat.tree import EngineTree

VERSION_FILES = ("sglang/version.py", "sglang/_version.py")


@probe("sglang", "version_in_source", "Version declared in the source", order=10)
def version_in_source(tree: EngineTree) -> dict:
    for relpath in VERSION_FILES:
        module = safe_parse(tree, relpath)
        if module is None:
            continue
        for stmt in module.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            value = getattr(stmt, "value", None)
            if names & {"__version__", "version"} and isinstance(value, ast.Constant) and isinstance(value.value, str):
                return {"present": True, "version": value.value, "location": tree.loc(relpath, stmt)}
    return {"present": False, "reason": "no literal __version__ in " + " or ".join(VERSION_FILES)}
