"""Every architecture SGLang registers (`EntryClass = ...` at the bottom of its model files).

The doctor needs this before it offers a patch: a patch can add the capture hook to a registered
class, but it cannot make a release load an architecture it does not have.

JSON: {"Architecture": "sglang/srt/models/FILE.py:LINE", ...}
"""

from __future__ import annotations

from compat.probes import probe
from compat.probes.sglang._models import models_index
from compat.core.tree import EngineTree


@probe("sglang", "target_architectures", "Architectures the models folder registers", order=90)
def target_architectures(tree: EngineTree) -> dict[str, str]:
    return {arch: tree.loc(relpath, line) for arch, (relpath, line) in sorted(models_index(tree).registered.items())}
