"""Does the release read a vllm-project/speculators drafter (`speculators_model_type`) itself?

vLLM translates a speculators config into its drafter's HF config (probes/vllm/speculators_format.py);
SGLang's equivalent would have to sit in its config loader (`get_config` in
sglang/srt/utils/hf_transformers/config.py; hf_transformers_utils.py in older releases) or in the
draft-model set-up. The probe looks for any code under sglang/srt that reads `speculators_model_type`
or `speculators_config`, and reports where the loader is either way:

    {"present": false, "loader": {"function": "get_config", "location"}, "readers": [],
     "reason": "..."}
    {"present": true, "loader": {...}, "readers": [{"key", "location"}, ...]}

Every release read so far (0.4.4 - 0.5.23) has none: a speculators checkpoint must be converted for SGLang.
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.core.tree import EngineTree

LOADER_HOMES = ("sglang/srt/utils/hf_transformers/config.py", "sglang/srt/utils/hf_transformers_utils.py",
                "sglang/srt/hf_transformers_utils.py")
KEYS = ("speculators_model_type", "speculators_config")


@probe("sglang", "speculators_format", "speculators-format drafters read natively", order=64)
def speculators_format(tree: EngineTree) -> dict:
    loader = _loader(tree)
    readers = []
    for key in KEYS:
        for relpath in tree.grep(f'"{key}"'.encode(), under="sglang/srt"):
            for node in ast.walk(tree.parse(relpath)):
                if isinstance(node, ast.Constant) and node.value == key:
                    readers.append({"key": key, "location": tree.loc(relpath, node)})
    out: dict = {"present": bool(readers), "loader": loader, "readers": readers}
    if not readers:
        out["reason"] = ("no code under sglang/srt reads speculators_model_type or speculators_config: the config loader "
                         "takes the drafter's config.json as a plain HF config, and architectures Eagle3Speculator is no "
                         "registered model")
    return out


def _loader(tree: EngineTree) -> dict | None:
    for relpath in [p for p in LOADER_HOMES if tree.exists(p)] or tree.grep(b"\ndef get_config(", under="sglang/srt/utils"):
        for node in tree.parse(relpath).body:
            if isinstance(node, ast.FunctionDef) and node.name == "get_config":
                return {"function": "get_config", "location": tree.loc(relpath, node)}
    return None
