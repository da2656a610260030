"""Which SGLang target classes can feed a DFlash or DSpark drafter, and how they shift its layer ids.

The block drafters have their own capture hooks (`set_dflash_layers_to_capture`, `set_dspark_layers_to_capture`,
from 0.5.11 / 0.5.16), read like EAGLE-3's (`_models.analyze_capture_method`): in 0.5.23 most targets capture
before layer `k + 1` for a DFlash id k ("To capture the hidden state after target layer k (HF-style), we capture
before layer k + 1", models/qwen3.py:803-805). A class that only inherits the hook is listed under the class it
inherits from (`bases`): the check follows one level.
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes.sglang._models import analyze_capture_method
from compat.core.tree import EngineTree, UnparseableFile

HOOKS = {"DFLASH": "set_dflash_layers_to_capture", "DSPARK": "set_dspark_layers_to_capture"}


@probe("sglang", "block_targets", "DFlash/DSpark target classes (set_dflash/dspark_layers_to_capture) and their offsets",
       order=52)
def block_targets(tree: EngineTree) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for member, hook in HOOKS.items():
        entries: list[dict] = []
        for relpath in tree.grep(f"def {hook}".encode(), under="sglang/srt/models"):
            try:
                module = tree.parse(relpath)
            except UnparseableFile:
                continue
            for cls in (n for n in module.body if isinstance(n, ast.ClassDef)):
                fn = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == hook), None)
                if fn is None:
                    continue
                method = analyze_capture_method(cls.name, relpath, fn)
                entries.append({"class": cls.name, "layer_id_offset": method.offset, "delegates_to": method.delegates_to,
                                "location": tree.loc(relpath, fn)})
        if entries:
            out[member] = entries
    return out
