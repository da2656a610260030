"""Which dtype vLLM runs the draft in: SpeculativeConfig builds the draft's ModelConfig with
`dtype=self.target_model_config.dtype` (the target's, i.e. --dtype), read by text with its file:line."""

from __future__ import annotations

import re

from compat.probes import probe
from compat.probes.vllm._common import speculative_config_class
from compat.tree import EngineTree

SHARED = re.compile(rb"dtype\s*=\s*self\.target_model_config\.dtype")


@probe("vllm", "draft_dtype", "The draft model's dtype (the target's)", order=88)
def draft_dtype(tree: EngineTree) -> dict:
    found = speculative_config_class(tree)
    if found is None:
        return {"present": False, "reason": "no class SpeculativeConfig"}
    data = tree.read_bytes(found[0])
    m = SHARED.search(data)
    if m is None:
        return {"present": False, "reason": "SpeculativeConfig does not pass the target's dtype to the draft"}
    return {"present": True, "from_target": True, "location": tree.loc(found[0], data.count(b"\n", 0, m.start()) + 1)}
