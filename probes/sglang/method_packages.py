"""The packages SGLang's speculative workers need beyond SGLang's own dependencies (probes/method_packages.py): what
each worker module of sglang/srt/speculative imports inside its functions, on their straight path, or guards with an
ImportError that raises. A worker file names its algorithm (`ngram_worker.py`, `dflash_worker_v2.py`); one that names
none (`multi_layer_eagle_worker.py` names EAGLE) serves every algorithm whose name it holds. No release read here has
one: SGLang's speculative code falls back when an optional kernel is missing (`flashinfer`, `torch_npu`) or imports it
for one platform only.

    {"present": true, "workers": {"sglang/srt/speculative/ngram_worker.py": [requirement, ...], ...}}
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.method_packages import module_requirements

SPECULATIVE = "sglang/srt/speculative"


@probe("sglang", "method_packages", "Packages a method needs beyond SGLang's own dependencies", order=90)
def method_packages(tree: EngineTree) -> dict:
    files = [f for f in tree.files(SPECULATIVE) if f.endswith(".py") and "worker" in f.rsplit("/", 1)[-1]]
    if not files:
        return {"present": False, "reason": f"no worker module under {SPECULATIVE}"}
    return {"present": True, "location": tree.loc(sorted(files)[0], 1),
            "workers": {f: module_requirements(tree, f) for f in sorted(files)}}
