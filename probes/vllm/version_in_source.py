"""The version string the release writes into its own source (setuptools-scm's _version.py)."""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.tree import EngineTree

VERSION_FILES = ("vllm/_version.py", "vllm/version.py")
VERSION_NAMES = {"__version__", "version"}


@probe("vllm", "version_in_source", "Version written in the source", order=10)
def version_in_source(tree: EngineTree) -> dict:
    for relpath in VERSION_FILES:
        if not tree.exists(relpath):
            continue
        for node in ast.walk(tree.parse(relpath)):
            if isinstance(node, ast.Assign):
                targets = [t for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                targets = [node.target]
            else:
                continue
            value = node.value
            if {t.id for t in targets} & VERSION_NAMES and isinstance(value, ast.Constant) and isinstance(value.value, str):
                return {"present": True, "version": value.value, "location": tree.loc(relpath, node)}
    return {"present": False, "reason": f"no version string assigned in {' or '.join(VERSION_FILES)}"}
