"""Inputs of the offline method-check tests: real releases' facts (method_facts/, captured by
capture_method_facts.py), and drafters built from each trainer's real config keys and tensor names."""

from __future__ import annotations

import json
from pathlib import Path

from compat.checks import Ctx, Drafter, Options
from compat.doctor.inputs import no_drafter, recognise
from compat.launch_line import read_line
from compat.target import Target

FACTS = Path(__file__).resolve().parent / "method_facts"

# SpecForge a6b6b02 configs/qwen3-8b-dflash.json: a 5-layer DFlash drafter for Qwen3-8B (36 layers), output-of ids
SPECFORGE_DFLASH = {"architectures": ["DFlashDraftModel"], "auto_map": {"AutoModel": "dflash.DFlashDraftModel"},
                    "block_size": 16, "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 33]},
                    "model_type": "qwen3", "num_hidden_layers": 5, "num_target_layers": 36, "hidden_size": 4096,
                    "vocab_size": 151936}
DFLASH_TENSORS = {"fc.weight": ("BF16", (4096, 20480)), "hidden_norm.weight": ("BF16", (4096,)),
                  "layers.0.self_attn.q_proj.weight": ("BF16", (4096, 4096)), "norm.weight": ("BF16", (4096,))}
# SpecForge configs/qwen3-8b-dspark.json: DSparkDraftModel(DFlashDraftModel), no sample_from_anchor written
SPECFORGE_DSPARK = {**SPECFORGE_DFLASH, "architectures": ["DSparkDraftModel"], "auto_map": {"AutoModel": "dspark.DSparkDraftModel"},
                    "block_size": 7, "dflash_config": {"attention_mode": "gqa", "markov_rank": 256, "mask_token_id": 151669,
                                                       "projector_type": "dspark", "target_layer_ids": [1, 9, 17, 25, 33]}}
# speculators c05b95b models/dflash/config.py, dspark/config.py (serialised): capture-before aux ids
SPECULATORS_DFLASH = {"speculators_model_type": "dflash", "architectures": ["DFlashSpeculator"], "block_size": 8,
                      "aux_hidden_state_layer_ids": [2, 18, 33], "mask_token_id": 151669, "draft_vocab_size": 32000,
                      "speculators_config": {"algorithm": "dflash"}, "transformer_layer_config": {"model_type": "qwen3"}}
SPECULATORS_DSPARK = {**SPECULATORS_DFLASH, "speculators_model_type": "dspark", "architectures": ["DSparkSpeculator"],
                      "markov_rank": 256}
# the dense DeepSpec checkpoint deepseek-ai/dspark_qwen3_8b_block7 (vLLM's Qwen3DSparkModel): top-level output-of ids
DEEPSPEC_DSPARK = {"architectures": ["Qwen3DSparkModel"], "model_type": "qwen3", "block_size": 7, "markov_rank": 256,
                   "target_layer_ids": [1, 9, 17, 25, 33], "num_hidden_layers": 5, "hidden_size": 4096, "vocab_size": 151936}
# SpecForge configs/qwen3-8b-peagle.json (+ the parallel-drafting tensor)
SPECFORGE_PEAGLE = {"architectures": ["PEagleDraftModel"], "model_type": "llama", "num_hidden_layers": 4, "hidden_size": 4096,
                    "vocab_size": 151936, "draft_vocab_size": 32000}
PEAGLE_TENSORS = {"fc.weight": ("BF16", (4096, 12288)), "mask_hidden": ("BF16", (1, 12288)), "d2t": ("I64", (32000,))}
QWEN3_8B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 36, "hidden_size": 4096,
            "vocab_size": 151936}
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 61,
               "num_nextn_predict_layers": 1, "hidden_size": 7168, "vocab_size": 129280}


def release(engine: str, version: str) -> dict:
    return json.loads((FACTS / f"{engine}-{version}.json").read_text())


def target(config: dict = QWEN3_8B, path: str = "/models/target") -> Target:
    text = config.get("text_config") or {}
    archs = list(config.get("architectures") or [])
    return Target(Path(path), Path(path) / "config.json", dict(config), text.get("model_type") or config.get("model_type"),
                  config.get("model_type"), archs, archs[0] if archs else None, config.get("num_hidden_layers"),
                  config.get("vocab_size"), config.get("hidden_size"), None)


def drafter(config: dict | None, tensors: dict | None = None, tgt: Target | None = None) -> Drafter:
    if config is None:
        return no_drafter(tgt or target())
    return recognise(Drafter(Path("/models/drafter"), dict(config), dict(tensors or {})), tgt)


def ctx(engine: str, version: str, config: dict | None, tensors: dict | None = None, *, tgt: Target | None = None,
        method: str | None = None, line: str | None = None, python=None) -> Ctx:
    tgt = tgt or target()
    options = Options(method=method, launch=read_line(line) if line else None, fixes_python=python)
    facts = release(engine, version)
    loaders = facts.get("class_loaders") or {}
    return Ctx(facts, tgt, drafter(config, tensors, tgt), options,
               loaders=lambda arch: loaders.get(arch) or {"architecture": arch, "error": f"{arch} was not captured"})
