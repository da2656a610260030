"""Write the release facts the offline method-check tests use, from real releases (run when a probe changes):

    python tests/checks/capture_method_facts.py

Each file is what `compat probe --json` reports for one release, only the keys the method checks read (methods,
the layer-id reader, the target interface, the MTP rewrite, SGLang's block-drafter hooks, the packages a method
imports, the loader's check of what was loaded), and how the release's classes in CLASSES load a checkpoint (what
doctor reads on demand: compat.probes.model_loader); the releases are those
before and after each upstream change the checks judge (vllm#40727 and the V2 reader in 0.24.0, DSpark's anchor key
in 0.25.0 and 0.27.0, P-EAGLE's removal and suffix's package in 0.34.0, DeepSeekMTP's raise on a missing layer in
0.17.0 (vllm#35548) and Medusa's old FasterDecoding names in 0.25.0; SGLang's NextN export in 0.4.4, DFLASH in 0.5.11,
DSPARK in 0.5.16, its sample_from_anchor in 0.5.19; the method as each release resolves it and the runner it takes:
vLLM 0.10.0's deepseek_mtp, the draft model refused without a method until 0.17.0 (vllm#31883) and by any name until
0.15.0, the path detection that overrides an explicit method up to 0.33, the CPU runner's assert before 0.20).
tests/checks/test_captured_method_facts.py (network) fails when they drift.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/pinned.py: the pinned releases

FACTS_DIR = Path(__file__).resolve().parent / "method_facts"
KEYS = {"vllm": ("methods", "method_autodetection", "model_runners", "aux_layer_ids", "eagle3_targets",
                 "drafter_architecture_rename", "speculative_config", "cli_flags", "method_packages", "weights_check",
                 "version"),
        "sglang": ("methods", "block_targets", "target_architectures", "drafter_architecture_rename", "cli_flags",
                   "method_packages", "weights_check", "version")}
RELEASES = [("vllm", "0.10.0"), ("vllm", "0.13.0"), ("vllm", "0.15.1"), ("vllm", "0.16.0"), ("vllm", "0.18.0"),
            ("vllm", "0.20.0"), ("vllm", "0.24.0"), ("vllm", "0.25.0"), ("vllm", "0.27.0"), ("vllm", "0.33.0"),
            ("vllm", "0.34.0"), ("sglang", "0.4.4"), ("sglang", "0.5.10"), ("sglang", "0.5.11"), ("sglang", "0.5.16"),
            ("sglang", "0.5.18"), ("sglang", "0.5.23")]
# the classes the method-tensors tests load with (class_loaders: how each release's class loads a checkpoint), kept
# for the releases that register them
CLASSES = ("DeepSeekMTPModel", "Qwen3NextMTP", "MedusaModel", "LlamaForCausalLM", "DFlashDraftModel", "Qwen3DSparkModel",
           "EagleLlamaForCausalLM", "DeepseekV3ForCausalLMNextN", "LlamaForCausalLMEagle")


def facts(engine: str, version: str) -> dict:
    import pinned
    from compat.probes.model_loader import class_loader
    from compat.report import build_report

    tree = pinned.fetch(engine, version)
    report = build_report(tree)
    loaders = {arch: found for arch in CLASSES if not (found := class_loader(tree, arch)).get("error")}
    return {"engine": engine, **{key: report[key] for key in KEYS[engine]}, "class_loaders": loaders}


def main() -> int:
    FACTS_DIR.mkdir(exist_ok=True)
    for engine, version in RELEASES:
        (FACTS_DIR / f"{engine}-{version}.json").write_text(json.dumps(facts(engine, version), indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
