"""Which dtype vLLM runs the draft in: the draft's ModelConfig is built with the target's dtype (--dtype):
`dtype=self.target_model_config.dtype` in SpeculativeConfig up to 0.33, `dtype=target.dtype` in
v1/worker/gpu/spec_decode/speculator_config.py from 0.34; read by text with its file:line."""

from __future__ import annotations

import re

from compat.probes import probe
from compat.probes.vllm._common import speculative_config_class
from compat.core.tree import EngineTree

SHARED = re.compile(rb"dtype\s*=\s*(?:self\.target_model_config|target_model_config|target|spec\.target_model_config)\.dtype\b")
MOVED = ("vllm/v1/worker/gpu/spec_decode", "vllm/v1/spec_decode")  # where 0.34 builds the draft's ModelConfig


@probe("vllm", "draft_dtype", "The draft model's dtype (the target's)", order=88)
def draft_dtype(tree: EngineTree) -> dict:
    found = speculative_config_class(tree)
    if found is None:
        return {"present": False, "reason": "no class SpeculativeConfig"}
    candidates = [found[0]] + [p for d in MOVED for p in tree.files(d) if p.endswith(".py")]
    for relpath in candidates:
        data = tree.read_bytes(relpath)
        if relpath != found[0] and b"ModelConfig(" not in data:
            continue
        m = SHARED.search(data)
        if m is not None:
            return {"present": True, "from_target": True, "location": tree.loc(relpath, data.count(b"\n", 0, m.start()) + 1)}
    return {"present": False, "reason": "no draft ModelConfig built with the target's dtype found"}
