"""Which dtype SGLang runs the draft in: the draft worker's ModelConfig comes from the same ServerArgs
(`ModelConfig.from_server_args`: `dtype=server_args.dtype`, from 0.5.20 `dtype=cfg.dtype`; 0.4.x: the
TpModelWorker the draft worker extends), i.e. --dtype;
read by text with its file:line."""

from __future__ import annotations

import re

from compat.probes import probe
from compat.core.tree import EngineTree

HOMES = ("sglang/srt/configs/model_config.py", "sglang/srt/managers/tp_worker.py")  # 0.4.x: the worker builds it
SHARED = re.compile(rb"dtype\s*=\s*(?:server_args|cfg|self\.server_args)\.dtype\b")


@probe("sglang", "draft_dtype", "The draft model's dtype (the server's --dtype)", order=88)
def draft_dtype(tree: EngineTree) -> dict:
    for home in (h for h in HOMES if tree.exists(h)):
        data = tree.read_bytes(home)
        m = SHARED.search(data)
        if m is not None:
            return {"present": True, "from_target": True, "location": tree.loc(home, data.count(b"\n", 0, m.start()) + 1)}
    return {"present": False, "reason": "no ModelConfig built with the server's dtype found"}
