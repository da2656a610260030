"""Which class SGLang builds for an architecture name: the class of that name listed in an `EntryClass` of
sglang/srt/models/ (SGLang registers classes under their own names)."""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes.sglang._models import models_index


def find_class(tree: EngineTree, architecture: str) -> dict | None:
    """{"relpath", "class", "table", "registered"} of the class registered under `architecture`; None when none is."""
    index = models_index(tree)
    registered = index.registered.get(architecture)
    if registered is None:
        return None
    entry_file, entry_line = registered
    header = index.find(architecture, entry_file, tree)
    return {"relpath": header.relpath if header else entry_file, "class": architecture, "table": "EntryClass",
            "registered": tree.loc(entry_file, entry_line)}


def fallback_unknown(tree: EngineTree) -> dict | None:
    """SGLang has no loader class of its own: a class's loop decides."""
    return None
