"""The messages SGLang raises and logs on the code paths that serve speculative decoding, as patterns with
file and line (what `compat explain` maps a user's error text or log back to).

The files: the server arguments (`sglang/srt/server_args.py`, where the speculative options are checked), the
model config, the whole speculative package (`sglang/srt/speculative/`: the EAGLE workers, draft utils, CUDA
graph runners), the model runner and the model loaders, the drafter models (model files whose name says eagle,
mtp or nextn), and the scheduler file that writes the decode log line with `accept len` (found by that text).
See probes/_error_sites.py for what a site holds.
"""

from __future__ import annotations

import posixpath

from compat.probes import probe
from compat.probes._error_sites import sites_fact
from compat.core.tree import EngineTree

HOMES = ("sglang/srt/server_args.py", "sglang/srt/configs/model_config.py", "sglang/srt/model_executor/model_runner.py",
         "sglang/srt/models/registry.py")
PACKAGES = ("sglang/srt/speculative", "sglang/srt/model_loader")
MODELS = "sglang/srt/models"
DRAFTER_WORDS = ("eagle", "mtp", "nextn", "draft")
MANAGERS = "sglang/srt/managers"
METRICS_LINE = b"accept len"


def spec_decode_files(tree: EngineTree) -> list[str]:
    found: dict[str, None] = {relpath: None for relpath in HOMES if tree.exists(relpath)}
    for package in PACKAGES:
        for relpath in tree.files(package):
            found[relpath] = None
    for relpath in tree.files(MODELS):
        if any(word in posixpath.basename(relpath).lower() for word in DRAFTER_WORDS):
            found[relpath] = None
    for relpath in tree.grep(METRICS_LINE, under=MANAGERS):
        found[relpath] = None
    return list(found)


@probe("sglang", "error_sites", "Errors and log messages on the speculative-decoding code paths (compat explain)", order=85)
def error_sites(tree: EngineTree) -> dict:
    return sites_fact(tree, spec_decode_files(tree))
