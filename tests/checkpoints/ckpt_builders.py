"""Tiny synthetic EAGLE-3 drafters in every layout, built byte by byte for the converter tests.

hidden 64, 4 heads of 16, intermediate 128, target vocab 256, draft vocab 128, an 8-layer target.
Tensor values are random but seeded, so "byte-identical" is a meaningful check.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

HIDDEN, HEADS, HEAD_DIM, INTER = 64, 4, 16, 128
VOCAB, DRAFT_VOCAB, TARGET_LAYERS = 256, 128, 8
TRAINED_ON = [3, 5, 6]  # capture-before ids the synthetic drafters were "trained" on (not the default [2, 4, 5])
MLA = dict(q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16)


def _bf16(rng: np.random.Generator, *shape: int) -> np.ndarray:
    # bf16 is stored as uint16 bit patterns; safetensors.numpy has no bf16, so write F16 for weights
    return rng.standard_normal(shape).astype(np.float16)


def vocab_maps(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    used = np.sort(rng.choice(VOCAB, size=DRAFT_VOCAB, replace=False))
    d2t = (used - np.arange(DRAFT_VOCAB)).astype(np.int64)
    t2d = np.zeros(VOCAB, dtype=bool)
    t2d[used] = True
    return d2t, t2d


def canonical_tensors(family: str = "llama", seed: int = 0, embed: bool = True) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = {}
    if embed:
        t["embed_tokens.weight"] = _bf16(rng, VOCAB, HIDDEN)
    t["fc.weight"] = _bf16(rng, HIDDEN, 3 * HIDDEN)
    t["norm.weight"] = _bf16(rng, HIDDEN)
    t["lm_head.weight"] = _bf16(rng, DRAFT_VOCAB, HIDDEN)
    p = "layers.0."
    for norm in ("input_layernorm", "hidden_norm", "post_attention_layernorm"):
        t[p + norm + ".weight"] = _bf16(rng, HIDDEN)
    if family == "llama":
        t[p + "self_attn.q_proj.weight"] = _bf16(rng, HEADS * HEAD_DIM, 2 * HIDDEN)
        t[p + "self_attn.k_proj.weight"] = _bf16(rng, HEADS * HEAD_DIM, 2 * HIDDEN)
        t[p + "self_attn.v_proj.weight"] = _bf16(rng, HEADS * HEAD_DIM, 2 * HIDDEN)
        t[p + "self_attn.o_proj.weight"] = _bf16(rng, HIDDEN, HEADS * HEAD_DIM)
    else:
        qk = MLA["qk_nope_head_dim"] + MLA["qk_rope_head_dim"]
        t[p + "self_attn.q_a_proj.weight"] = _bf16(rng, MLA["q_lora_rank"], 2 * HIDDEN)
        t[p + "self_attn.q_a_layernorm.weight"] = _bf16(rng, MLA["q_lora_rank"])
        t[p + "self_attn.q_b_proj.weight"] = _bf16(rng, HEADS * qk, MLA["q_lora_rank"])
        t[p + "self_attn.kv_a_proj_with_mqa.weight"] = _bf16(rng, MLA["kv_lora_rank"] + MLA["qk_rope_head_dim"], 2 * HIDDEN)
        t[p + "self_attn.kv_a_layernorm.weight"] = _bf16(rng, MLA["kv_lora_rank"])
        t[p + "self_attn.kv_b_proj.weight"] = _bf16(rng, HEADS * (MLA["qk_nope_head_dim"] + MLA["v_head_dim"]), MLA["kv_lora_rank"])
        t[p + "self_attn.o_proj.weight"] = _bf16(rng, HIDDEN, HEADS * MLA["v_head_dim"])
    t[p + "mlp.gate_proj.weight"] = _bf16(rng, INTER, HIDDEN)
    t[p + "mlp.up_proj.weight"] = _bf16(rng, INTER, HIDDEN)
    t[p + "mlp.down_proj.weight"] = _bf16(rng, HIDDEN, INTER)
    t["d2t"], t["t2d"] = vocab_maps(rng)
    return t


LLAMA_FIELDS = {
    "hidden_size": HIDDEN, "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "head_dim": HEAD_DIM,
    "intermediate_size": INTER, "rms_norm_eps": 1e-5, "hidden_act": "silu", "max_position_embeddings": 4096,
    "rope_theta": 10000.0, "vocab_size": VOCAB, "num_hidden_layers": 1,
}


def eagle_config() -> dict:  # SpecForge: nested output-of ids
    return {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", **LLAMA_FIELDS,
            "draft_vocab_size": DRAFT_VOCAB, "tie_word_embeddings": False, "torch_dtype": "float16",
            "eagle_config": {"eagle_aux_hidden_state_layer_ids": [i - 1 for i in TRAINED_ON], "use_aux_hidden_state": True}}


def vllm_config() -> dict:
    return {"architectures": ["Eagle3LlamaForCausalLM"], "model_type": "llama", **LLAMA_FIELDS,
            "draft_vocab_size": DRAFT_VOCAB, "torch_dtype": "float16", "eagle_aux_hidden_state_layer_ids": list(TRAINED_ON)}


def speculators_config() -> dict:
    layer = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **LLAMA_FIELDS, "torch_dtype": "float16"}
    return {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3", "speculators_version": "0.3.0",
            "transformer_layer_config": layer, "draft_vocab_size": DRAFT_VOCAB, "norm_before_residual": False,
            "target_hidden_size": None, "eagle_aux_hidden_state_layer_ids": list(TRAINED_ON),
            "speculators_config": {"algorithm": "eagle3", "default_proposal_method": "greedy",
                                   "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                                   "verifier": {"name_or_path": "synthetic/target", "architectures": ["LlamaForCausalLM"]}}}


def mla_config() -> dict:  # TorchSpec-style MLA drafter with both id fields
    fields = {k: v for k, v in LLAMA_FIELDS.items() if k not in ("num_key_value_heads", "head_dim")}
    return {"architectures": ["Eagle3DeepseekV2ForCausalLM"], "model_type": "kimi_k2", **fields, **MLA,
            "draft_vocab_size": DRAFT_VOCAB, "torch_dtype": "float16",
            "eagle_aux_hidden_state_layer_ids": list(TRAINED_ON),
            "eagle_config": {"eagle_aux_hidden_state_layer_ids": [i - 1 for i in TRAINED_ON], "use_aux_hidden_state": True}}


LAYOUT_SPECS = {  # layout -> (family, config builder, name of decoder layer 0)
    "eagle": ("llama", eagle_config, "midlayer."),
    "vllm": ("llama", vllm_config, "layers.0."),
    "speculators": ("llama", speculators_config, "layers.0."),
    "mla": ("mla", mla_config, "layers.0."),
}


def write_drafter(path: Path, layout: str, *, config: dict | None = None, tensors: dict | None = None,
                  embed: bool = True) -> Path:
    family, make_config, layer0 = LAYOUT_SPECS[layout]
    path.mkdir(parents=True)
    canonical = tensors if tensors is not None else canonical_tensors(family, embed=embed)
    named = {(layer0 + k[len("layers.0."):]) if k.startswith("layers.0.") else k: v for k, v in canonical.items()}
    save_file(named, str(path / "model.safetensors"), metadata={"format": "pt"})
    (path / "config.json").write_text(json.dumps(config if config is not None else make_config(), indent=2))
    return path


def write_target(path: Path, *, family: str = "llama", hidden: int = HIDDEN, vocab: int = VOCAB, layers: int = TARGET_LAYERS) -> Path:
    path.mkdir(parents=True)
    if family == "llama":
        config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}
    else:
        config = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2"}
    config.update(hidden_size=hidden, vocab_size=vocab, num_hidden_layers=layers)
    (path / "config.json").write_text(json.dumps(config))
    return path
