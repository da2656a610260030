"""Synthetic targets and drafters for the doctor tests, written here (configs + small safetensors).

Only config.json files and safetensors headers matter to `compat doctor`, so the tensors are tiny;
the names, shapes and config fields are what the real producers write (research
checkpoint-formats.md 1.1 and 2.3: a SpecForge drafter has `midlayer.*`, no embed_tokens, d2t and t2d,
`LlamaForCausalLMEagle3`, model_type llama, and output-of layer ids under eagle_config).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

HIDDEN = 64
HEADS = 2
HEAD_DIM = 32
INTERMEDIATE = 128
VOCAB = 1024
DRAFT_VOCAB = 256


def write_target(directory: Path, *, model_type: str = "kimi_k2", architecture: str = "DeepseekV3ForCausalLM",
                 layers: int = 61, vocab: int = VOCAB, extra: dict | None = None) -> Path:
    """A target model directory with only its config.json (the doctor never reads weights)."""
    directory.mkdir(parents=True, exist_ok=True)
    config = {"architectures": [architecture], "model_type": model_type, "num_hidden_layers": layers,
              "hidden_size": HIDDEN, "vocab_size": vocab, **(extra or {})}
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def kimi_k2_target(directory: Path) -> Path:
    # Kimi-K2's config.json: model_type kimi_k2, DeepseekV3ForCausalLM, 61 layers, remote code config
    return write_target(directory, extra={"auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}})


def llama_layer(prefix: str, hidden: int = HIDDEN) -> dict[str, tuple[int, ...]]:
    q = HEADS * HEAD_DIM
    return {
        f"{prefix}input_layernorm.weight": (hidden,),
        f"{prefix}hidden_norm.weight": (hidden,),
        f"{prefix}post_attention_layernorm.weight": (hidden,),
        f"{prefix}self_attn.q_proj.weight": (q, 2 * hidden),
        f"{prefix}self_attn.k_proj.weight": (q, 2 * hidden),
        f"{prefix}self_attn.v_proj.weight": (q, 2 * hidden),
        f"{prefix}self_attn.o_proj.weight": (hidden, q),
        f"{prefix}mlp.gate_proj.weight": (INTERMEDIATE, hidden),
        f"{prefix}mlp.up_proj.weight": (INTERMEDIATE, hidden),
        f"{prefix}mlp.down_proj.weight": (hidden, INTERMEDIATE),
    }


def write_drafter(directory: Path, config: dict, shapes: dict[str, tuple[int, ...]], *, d2t: bool = True,
                  t2d: bool = True, draft_vocab: int = DRAFT_VOCAB, vocab: int = VOCAB) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    tensors = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}
    used = np.sort(rng.choice(vocab, size=draft_vocab, replace=False))
    if d2t:
        tensors["d2t"] = (used - np.arange(draft_vocab)).astype(np.int64)
    if t2d:
        mask = np.zeros(vocab, dtype=bool)
        mask[used] = True
        tensors["t2d"] = mask
    save_file(tensors, str(directory / "model.safetensors"))
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def specforge_drafter(directory: Path, *, layer_ids: list[int] | None = (1, 29, 57), prefix: str = "midlayer.",
                      architecture: str = "LlamaForCausalLMEagle3", draft_vocab: int = DRAFT_VOCAB,
                      vocab: int = VOCAB, top_level_ids: list[int] | None = None, d2t: bool = True) -> Path:
    """What SpecForge's train_eagle3.py saves for a Kimi-K2 target: midlayer.*, no embed, output-of ids."""
    config = {
        "architectures": [architecture], "model_type": "llama", "hidden_size": HIDDEN,
        "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "head_dim": HEAD_DIM,
        "intermediate_size": INTERMEDIATE, "num_hidden_layers": 1, "rms_norm_eps": 1e-6,
        "vocab_size": vocab, "draft_vocab_size": draft_vocab, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "max_position_embeddings": 4096,
    }
    if layer_ids is not None:
        config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": list(layer_ids), "use_aux_hidden_state": True}
    if top_level_ids is not None:
        config["eagle_aux_hidden_state_layer_ids"] = list(top_level_ids)
    shapes = {**llama_layer(prefix), "fc.weight": (HIDDEN, 3 * HIDDEN), "norm.weight": (HIDDEN,),
              "lm_head.weight": (draft_vocab, HIDDEN)}
    return write_drafter(directory, config, shapes, d2t=d2t, draft_vocab=draft_vocab, vocab=vocab)


def tiny_llama_target(directory: Path, *, layers: int = 8) -> Path:
    """A Llama target config vLLM's own config code can load (CPU attention needs head_dim >= 32)."""
    return write_target(directory, model_type="llama", architecture="LlamaForCausalLM", layers=layers, extra={
        "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "head_dim": HEAD_DIM,
        "intermediate_size": INTERMEDIATE, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "float32",
        "bos_token_id": 1, "eos_token_id": 2,
    })


def vllm_drafter(directory: Path, *, layer_ids: list[int] = (2, 4, 5)) -> Path:
    """A drafter in vLLM's layout (layers.0.*, top-level capture-before ids) for the tiny Llama target."""
    config = {
        "architectures": ["Eagle3LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
        "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "head_dim": HEAD_DIM,
        "intermediate_size": INTERMEDIATE, "num_hidden_layers": 1, "rms_norm_eps": 1e-6,
        "vocab_size": VOCAB, "draft_vocab_size": DRAFT_VOCAB, "tie_word_embeddings": False,
        "torch_dtype": "float32", "max_position_embeddings": 256, "norm_before_residual": False,
        "eagle_aux_hidden_state_layer_ids": list(layer_ids),
    }
    shapes = {**llama_layer("layers.0."), "fc.weight": (HIDDEN, 3 * HIDDEN), "norm.weight": (HIDDEN,),
              "lm_head.weight": (DRAFT_VOCAB, HIDDEN)}
    return write_drafter(directory, config, shapes, t2d=False)


def kimi_k25_target(directory: Path) -> Path:
    """Kimi-K2.5: a multimodal wrapper whose text_config is the 61-layer Kimi-K2 language model."""
    return write_target(directory, model_type="kimi_k25", architecture="KimiK25ForConditionalGeneration", layers=61, extra={
        "text_config": {"model_type": "kimi_k2", "architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61,
                        "hidden_size": HIDDEN, "vocab_size": VOCAB},
    })


def speculators_drafter(directory: Path, *, layer_ids: list[int] = (2, 4, 5), **switches) -> Path:
    """What speculators writes for an EAGLE-3 head (speculators 0.9.0 src/speculators/models/eagle3/config.py and
    core.py): `Eagle3Speculator`, the layer config under transformer_layer_config, layers.0.*, and the weights its
    switches build: `input_norm.weight` over the concatenated aux states (norm_before_fc, core.py:122), one
    `fc_norm.N.weight` per aux state (fc_norm, core.py:131)."""
    config = {
        "architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
        "transformer_layer_config": {"model_type": "llama", "hidden_size": HIDDEN, "num_attention_heads": HEADS,
                                     "num_key_value_heads": HEADS, "head_dim": HEAD_DIM,
                                     "intermediate_size": INTERMEDIATE, "num_hidden_layers": 1, "rms_norm_eps": 1e-6,
                                     "vocab_size": VOCAB, "max_position_embeddings": 256},
        "draft_vocab_size": DRAFT_VOCAB, "norm_before_residual": False, "target_hidden_size": None,
        "eagle_aux_hidden_state_layer_ids": list(layer_ids), **switches,
        "speculators_config": {"algorithm": "eagle3", "default_proposal_method": "greedy",
                               "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                               "verifier": {"name_or_path": "target", "architectures": ["LlamaForCausalLM"]}},
    }
    shapes = {**llama_layer("layers.0."), "fc.weight": (HIDDEN, 3 * HIDDEN), "norm.weight": (HIDDEN,),
              "lm_head.weight": (DRAFT_VOCAB, HIDDEN)}
    if switches.get("norm_before_fc"):
        shapes["input_norm.weight"] = (3 * HIDDEN,)
    if switches.get("fc_norm"):
        shapes.update({f"fc_norm.{i}.weight": (HIDDEN,) for i in range(3)})
    return write_drafter(directory, config, shapes)
