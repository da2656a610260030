"""Which dtype SGLang runs the draft in: the draft worker's ModelConfig comes from the same ServerArgs
(`ModelConfig.from_server_args`: `dtype=server_args.dtype`, from 0.5.20 `dtype=cfg.dtype`), i.e. --dtype;
read by text with its file:line."""

from __future__ import annotations

import re

from compat.probes import probe
from compat.tree import EngineTree

HOME = "sglang/srt/configs/model_config.py"
SHARED = re.compile(rb"dtype\s*=\s*(?:server_args|cfg|self\.server_args)\.dtype\b")


@probe("sglang", "draft_dtype", "The draft model's dtype (the server's --dtype)", order=88)
def draft_dtype(tree: EngineTree) -> dict:
    if not tree.exists(HOME):
        return {"present": False, "reason": f"no {HOME}"}
    data = tree.read_bytes(HOME)
    m = SHARED.search(data)
    if m is None:
        return {"present": False, "reason": "ModelConfig does not take the server's dtype"}
    return {"present": True, "from_target": True, "location": tree.loc(HOME, data.count(b"\n", 0, m.start()) + 1)}
