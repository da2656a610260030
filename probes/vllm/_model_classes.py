"""Which class vLLM builds for an architecture name: the model registry's tables, every one of them.

`_SPECULATIVE_DECODING_MODELS` holds the drafter and head classes (EAGLE, MTP, Medusa, DFlash, ...), the other tables
the models a draft model can be (a whole causal LM). The registry names a module and a class; a module that is a
package re-exports the class from one of its files (`vllm/models/deepseek_v4/__init__.py`), which is followed.
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes.drafter_code import ModuleCode
from compat.probes.vllm._common import registry_entries, registry_file, registry_module_file


def find_class(tree: EngineTree, architecture: str) -> dict | None:
    """{"relpath", "class", "table", "registered"} of the class registered under `architecture`; None when none is."""
    entry = next((e for e in registry_entries(tree) if e.architecture == architecture), None)
    if entry is None:
        return None
    relpath = registry_module_file(tree, entry.module)
    registered = tree.loc(registry_file(tree) or "", entry.lineno)
    if relpath is None:
        return {"relpath": None, "class": entry.cls, "table": entry.table, "registered": registered}
    code = ModuleCode(tree, relpath)
    if code.resolve_class_name(entry.cls) not in code.classes:  # a package: the file its __init__ imports it from
        origin = code.imported(entry.cls)
        for candidate in ((origin[0].replace(".", "/") + ".py", origin[0].replace(".", "/") + "/__init__.py")
                          if origin else ()):
            if tree.exists(candidate):
                relpath = candidate
                break
    return {"relpath": relpath, "class": entry.cls, "table": entry.table, "registered": registered}


def fallback_unknown(tree: EngineTree) -> dict | None:
    """What happens to a name no module has when the class hands its names to AutoWeightsLoader."""
    from compat.probes.vllm.drafter_loader import auto_weights_loader

    return auto_weights_loader(tree)
