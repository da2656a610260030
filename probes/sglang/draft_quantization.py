"""How SGLang quantizes the draft model: `--speculative-draft-model-quantization` when given, else the target's
`--quantization` (ServerArgs: `speculative_draft_model_quantization = self.quantization`; from 0.5.20 the
serving hook's `speculative_draft_model_quantization=cfg.quantization`), and `unquant` to load it unquantized,
each with its file:line (read by text: the statements are one line in every release)."""

from __future__ import annotations

import re

from compat.probes import probe
from compat.core.tree import EngineTree

HOMES = ("sglang/srt/server_args.py",)
INHERITS = re.compile(rb"speculative_draft_model_quantization\s*=\s*(?:self|cfg|server_args)\.quantization\b")
NEWLINE = b"\n"
UNQUANT = re.compile(rb"speculative_draft_model_quantization\s*==\s*[\"']unquant[\"']")


@probe("sglang", "draft_quantization", "The draft model's quantization (own flag, else the target's)", order=87)
def draft_quantization(tree: EngineTree) -> dict:
    files = [h for h in HOMES if tree.exists(h)] + tree.files("sglang/srt/arg_groups")
    out: dict = {"inherits_target": False, "inherits_location": None, "unquant_location": None}
    for relpath in files:
        data = tree.read_bytes(relpath)
        for key, pattern in (("inherits_location", INHERITS), ("unquant_location", UNQUANT)):
            m = pattern.search(data)
            if m and out[key] is None:
                out[key] = tree.loc(relpath, data.count(NEWLINE, 0, m.start()) + 1)
    out["inherits_target"] = out["inherits_location"] is not None
    return out
