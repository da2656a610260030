"""The loader facts of any class a release registers, by architecture name: the entry of the drafter readers.

`class_loader(tree, architecture)` finds the class the release builds for the name (vLLM: the model registry's
tables; SGLang: the `EntryClass` lists; each engine's `_model_classes` module) and describes how it loads a checkpoint
with drafter_loading.describe: modules, steps (helpers kept as source, run by name_eval), the rule for unknown names,
what it does about missing ones (returns_loaded, completeness, prologue). Doctor asks for the classes it needs, once
per release (compat.facts.memo keeps the answer), so a draft model of any architecture is read like a drafter head.
"""

from __future__ import annotations

import importlib
from typing import Any

from compat import engines
from compat.core.tree import EngineTree
from compat.probes.drafter_code import ModuleCode
from compat.probes.drafter_loading import describe


def class_loader(tree: EngineTree, architecture: str) -> dict[str, Any]:
    """{"architecture", "class", "registered", "location", ...describe()} or {"architecture", "error"}."""
    lookup = _lookups(tree)
    if lookup is None:
        return {"architecture": architecture, "error": f"compat reads no model registry of {tree.engine}"}
    found = lookup.find_class(tree, architecture)
    if found is None:
        return {"architecture": architecture, "error": f"no class is registered under {architecture} in this release"}
    out: dict[str, Any] = {"architecture": architecture, "table": found["table"], "registered": found["registered"]}
    if found["relpath"] is None:
        return {**out, "class": found["class"], "error": f"the module of {found['class']} is not in this release"}
    out.update(describe(ModuleCode(tree, found["relpath"]), found["class"], lookup.fallback_unknown(tree)))
    return out


def _lookups(tree: EngineTree) -> Any:
    package = engines.get(tree.engine).probes
    if package is None:
        return None
    try:
        return importlib.import_module(f"{package}._model_classes")
    except ImportError:
        return None
