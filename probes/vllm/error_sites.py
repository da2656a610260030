"""The messages vLLM raises and logs on the code paths that serve speculative decoding, as patterns with
file and line (what `compat explain` maps a user's error text or log back to).

The files are chosen by what they are, not by a list of one release's paths: the speculative config's
home (`vllm/config/speculative.py`, or the single `vllm/config.py` of older releases) and the configs that
check it (`vllm/config/vllm.py`, `model.py`), argument parsing (`vllm/engine/arg_utils.py`), every file of
the speculative-decoding and worker packages (`vllm/v1/spec_decode/`, `vllm/spec_decode/` before v1, the
model runners under `vllm/v1/worker/`), the model loaders (`vllm/model_executor/model_loader/`), the
drafter configs (`vllm/transformers_utils/configs/`), the config reader and the layers a drafter's weights load
into (their weight loaders assert the shapes), the model interfaces and registry, and the drafter
models (model files whose name says eagle, medusa or mtp, in the classic folder or the per-model packages
of 0.24+). See probes/_error_sites.py for what a site holds.
"""

from __future__ import annotations

import posixpath

from compat.probes import probe
from compat.probes._error_sites import sites_fact
from compat.probes.vllm._common import ARG_UTILS_HOME, MODEL_DIRS, SPEC_CONFIG_HOMES
from compat.core.tree import EngineTree

CONFIG_FILES = ("vllm/config/vllm.py", "vllm/config/model.py", "vllm/config/cache.py")
PACKAGES = ("vllm/v1/spec_decode", "vllm/spec_decode", "vllm/model_executor/model_loader",
            "vllm/transformers_utils/configs/speculators", "vllm/v1/core/kv_cache_utils.py")
# The worker package holds every platform's runner and its helpers: only files that touch drafting (or the KV
# cache block size a drafter must share) are on the path.
WORKER = "vllm/v1/worker"
WORKER_NEEDLES = (b"speculative", b"spec_decode", b"eagle", b"drafter", b"block_size")
MODEL_FILES = ("interfaces.py", "registry.py")
DRAFTER_WORDS = ("eagle", "medusa", "mtp", "draft")
DRAFTER_CONFIGS = ("vllm/transformers_utils/configs/eagle.py", "vllm/transformers_utils/configs/medusa.py")
# Where a drafter's config is read and its weights land: the config reader, the model utilities' weight loader, the
# layers whose weight_loader asserts the shapes (a drafter's tensors of the wrong shape fail there).
LOADING = ("vllm/transformers_utils/config.py", "vllm/model_executor/models/utils.py",
           "vllm/model_executor/layers/linear.py", "vllm/model_executor/layers/vocab_parallel_embedding.py")


def spec_decode_files(tree: EngineTree) -> list[str]:
    """The files on the speculative-decoding code paths of this release, in a stable order."""
    found: dict[str, None] = {}
    for relpath in (*SPEC_CONFIG_HOMES, *CONFIG_FILES, ARG_UTILS_HOME, *DRAFTER_CONFIGS, *LOADING):
        if tree.exists(relpath):
            found[relpath] = None
    for package in PACKAGES:
        for relpath in tree.files(package):
            found[relpath] = None
    for relpath in tree.files(WORKER):
        data = tree.read_bytes(relpath)
        if any(needle in data for needle in WORKER_NEEDLES):
            found[relpath] = None
    for folder in MODEL_DIRS:
        for relpath in tree.files(folder):
            name = posixpath.basename(relpath)
            if name in MODEL_FILES or any(word in relpath.rpartition(folder)[2].lower() for word in DRAFTER_WORDS):
                found[relpath] = None
    return list(found)


@probe("vllm", "error_sites", "Errors and log messages on the speculative-decoding code paths (compat explain)", order=85)
def error_sites(tree: EngineTree) -> dict:
    return sites_fact(tree, spec_decode_files(tree))
