"""The messages LMDeploy raises and logs on the code paths that serve speculative decoding, as patterns with file and
line (what `compat explain` maps a user's error text or log back to). See probes/_error_sites.py for what a site holds.

The files, found by what they hold (a release that moves one is still read):
- the CLI and the server that build the speculative config (lmdeploy/cli/utils.py `get_speculative_config`,
  cli/serve.py, serve/core/async_engine.py: TurboMind's "speculative decoding is not supported by turbomind"),
  lmdeploy/messages.py (SpeculativeConfig), lmdeploy/pytorch/config.py (SpecDecodeConfig, the draft's ModelConfig)
  and the engine's config builder (pytorch/engine/config_builder.py, 0.14.0+; engine.py before);
- the whole speculative package (lmdeploy/pytorch/spec_decode/: proposers, the spec agent, DFlash's checks) and the
  ar_spec strategy (pytorch/strategies/ar_spec/);
- the config builders (lmdeploy/pytorch/configurations/: `assert spec_method == 'deepseek_mtp'`, "Kimi-K2 EAGLE3 draft
  config must use architecture ..."), the model map lookup (pytorch/models/patch.py: "Can not found rewrite for
  architectures"), the weight loader, and the draft model files (a name with eagle, mtp, dflash or draft);
- the stat loggers that write the speculative acceptance line (lmdeploy/metrics/).
"""

from __future__ import annotations

import posixpath

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes._error_sites import sites_fact

PACKAGES = ("lmdeploy/pytorch/spec_decode", "lmdeploy/pytorch/strategies/ar_spec")
# (where, what a file there must hold to be on the speculative path)
HOLDING = (("lmdeploy/cli", b"speculative"), ("lmdeploy/serve/core", b"speculative"), ("lmdeploy/messages.py", b"class SpeculativeConfig"),
           ("lmdeploy/pytorch/config.py", b"SpecDecodeConfig"), ("lmdeploy/pytorch/engine", b"SpecDecodeConfig"),
           ("lmdeploy/pytorch/configurations", b"spec_method"),
           ("lmdeploy/pytorch/models", b"Can not found rewrite"), ("lmdeploy/pytorch/weight_loader", b"def load_weight"),
           ("lmdeploy/metrics", b"spec_decode"))
MODELS = "lmdeploy/pytorch/models"
DRAFTER_WORDS = ("eagle", "mtp", "dflash", "draft")


def spec_decode_files(tree: EngineTree) -> list[str]:
    if not tree.files("lmdeploy/pytorch/spec_decode"):
        return []  # before 0.11.0: no speculative decoding to explain
    found: dict[str, None] = {}
    for package in PACKAGES:
        for relpath in tree.files(package):
            found[relpath] = None
    for where, needle in HOLDING:
        for relpath in tree.grep(needle, under=where):
            found[relpath] = None
    for relpath in tree.files(MODELS):
        if any(word in posixpath.basename(relpath).lower() for word in DRAFTER_WORDS):
            found[relpath] = None
    return list(found)


@probe("lmdeploy", "error_sites", "Errors and log messages on the speculative-decoding code paths (compat explain)", order=86)
def error_sites(tree: EngineTree) -> dict:
    return sites_fact(tree, spec_decode_files(tree))
