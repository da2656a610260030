"""Tiny models written to disk for the real-engine tests: safetensors + config.json, no tokenizer.

Only numpy and safetensors are needed here (torch lives in the engine venv).

The targets are built so that an EAGLE-3 drafter can be *right*, which makes acceptance a
measurement rather than noise:
- every target is a "permutation bigram": the embedding rows are random unit-scale vectors,
  `lm_head[y]` = the A part (below) of `embed[perm^-1(y)]`, and the decoder layers are random but small, so the greedy
  continuation of token x is perm(x) whatever the layers add. perm maps the draft vocabulary onto
  itself, so a prompt ending in a draft-vocab token stays there.
- the drafter's fc copies the last aux hidden state (the residual entering the target layer it
  names), which is ~embed(x_t); its lm_head row for draft id i is built from embed(perm^-2(i + d2t[i])), so its
  first proposal is perm(perm(x_t)) = x_{t+2}: correct every time if the engine loads the drafter
  as written (lm_head rows, d2t offsets, fc width, layer ids, draft vocab size). A drafter loaded
  wrongly (d2t ignored or read as absolute ids, rows shuffled) gets close to zero accepted tokens.
The drafter's second proposal repeats the first trick on its own hidden state and is usually
wrong; only the first draft position is expected to be accepted.

Layer ids are made to matter too. The hidden state has three parts: A (dims 0..63) carries the
token code the target's lm_head reads, B (64..126) a second code that only the drafter reads, and
one constant channel (127). The MLP of target layer FLIP_LAYER uses the constant channel as a gate
to compute about -2*B, flipping the sign of B; the target's output is unchanged (its lm_head ignores
B). The drafter's lm_head expects the *flipped* B, so it is right only if its last aux id is
FLIP_LAYER + 1 or later: with the ids one too low (SpecForge's output-of-layer ids read as vLLM's
capture-before ids) or vLLM's default ids (2, 4, 5), A and B cancel and acceptance collapses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

VOCAB = 512
DRAFT_VOCAB = 256
HIDDEN = 128
LAYER_WEIGHT_STD = 0.03  # small enough that the layers never flip the bigram's argmax
LM_HEAD_SCALE = 0.1      # target logits ~6 for the right token, ~2 for the runner-up
NUM_TARGET_LAYERS = 8
AUX_LAYER_IDS = [1, 3, 6]  # vLLM capture-before ids; deliberately not the default (2, 4, 5)
FLIP_LAYER = 5             # the last aux id must be > FLIP_LAYER for the drafter to be right
A_DIMS, B_DIMS, CONST_DIM = slice(0, 64), slice(64, 127), 127


@dataclass
class TinyTarget:
    """A target written to `path`, plus what a drafter needs to be built against it."""

    path: Path
    config: dict
    embed: np.ndarray         # [VOCAB, HIDDEN]
    perm: np.ndarray          # greedy next token of x is perm[x]
    draft_vocab: np.ndarray   # sorted target ids in the draft vocabulary
    aux_layer_ids: list[int] = field(default_factory=lambda: list(AUX_LAYER_IDS))

    def prompts(self, count: int, length: int, seed: int = 7) -> list[list[int]]:
        """Token-id prompts made of draft-vocab tokens (so the greedy walk stays in it)."""
        rng = np.random.default_rng(seed)
        return [rng.choice(self.draft_vocab, size=length).tolist() for _ in range(count)]


# -- shared pieces ------------------------------------------------------------------------------

def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _small(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return (rng.standard_normal(shape) * LAYER_WEIGHT_STD).astype(np.float32)


def _ones(*shape: int) -> np.ndarray:
    return np.ones(shape, dtype=np.float32)


def _bigram_world(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Embedding, a permutation that keeps the draft vocab closed, and that draft vocab."""
    embed = rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32)
    embed[:, CONST_DIM] = 1.0
    draft_vocab = np.sort(rng.choice(VOCAB, size=DRAFT_VOCAB, replace=False))
    others = np.setdiff1d(np.arange(VOCAB), draft_vocab)
    perm = np.empty(VOCAB, dtype=np.int64)
    perm[draft_vocab] = rng.permutation(draft_vocab)
    perm[others] = rng.permutation(others)
    return embed, perm, draft_vocab


def _lm_head_for(embed: np.ndarray, perm: np.ndarray, rows: np.ndarray, steps: int,
                 b_sign: float = 0.0) -> np.ndarray:
    """Row j scores token rows[j] by similarity to code A (and b_sign * code B) of
    embed[perm^-steps(rows[j])]."""
    inverse = np.argsort(perm)
    source = rows.copy()
    for _ in range(steps):
        source = inverse[source]
    head = np.zeros((len(rows), HIDDEN), dtype=np.float32)
    head[:, A_DIMS] = embed[source][:, A_DIMS]
    head[:, B_DIMS] = b_sign * embed[source][:, B_DIMS]
    return (head * LM_HEAD_SCALE).astype(np.float32)


def _flip_b_mlp(prefix: str, intermediate: int) -> dict[str, np.ndarray]:
    """An MLP whose output is about -2 * B: silu(10 * const) ~ 10 gates a copy of B."""
    width = B_DIMS.stop - B_DIMS.start
    gate = np.zeros((intermediate, HIDDEN), dtype=np.float32)
    up = np.zeros((intermediate, HIDDEN), dtype=np.float32)
    down = np.zeros((HIDDEN, intermediate), dtype=np.float32)
    rows = np.arange(width)
    gate[rows, CONST_DIM] = 10.0
    up[rows, B_DIMS.start + rows] = 1.0
    down[B_DIMS.start + rows, rows] = -0.2
    return {f"{prefix}.mlp.gate_proj.weight": gate, f"{prefix}.mlp.up_proj.weight": up,
            f"{prefix}.mlp.down_proj.weight": down}


def _write(path: Path, config: dict, tensors: dict[str, np.ndarray]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    save_file({name: np.ascontiguousarray(t) for name, t in tensors.items()},
              str(path / "model.safetensors"), metadata={"format": "pt"})
    (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return path


def _common_config() -> dict:
    return {
        "vocab_size": VOCAB,
        "hidden_size": HIDDEN,
        "max_position_embeddings": 512,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "bos_token_id": 0,
        "eos_token_id": 1,
        "hidden_act": "silu",
    }


# -- (a) Llama target ---------------------------------------------------------------------------

LLAMA_HEADS, LLAMA_KV_HEADS, LLAMA_HEAD_DIM, LLAMA_INTERMEDIATE = 4, 2, 32, 256


def _llama_layer(rng: np.random.Generator, prefix: str, in_width: int) -> dict[str, np.ndarray]:
    q, kv = LLAMA_HEADS * LLAMA_HEAD_DIM, LLAMA_KV_HEADS * LLAMA_HEAD_DIM
    return {
        f"{prefix}.self_attn.q_proj.weight": _small(rng, q, in_width),
        f"{prefix}.self_attn.k_proj.weight": _small(rng, kv, in_width),
        f"{prefix}.self_attn.v_proj.weight": _small(rng, kv, in_width),
        f"{prefix}.self_attn.o_proj.weight": _small(rng, HIDDEN, q),
        f"{prefix}.mlp.gate_proj.weight": _small(rng, LLAMA_INTERMEDIATE, HIDDEN),
        f"{prefix}.mlp.up_proj.weight": _small(rng, LLAMA_INTERMEDIATE, HIDDEN),
        f"{prefix}.mlp.down_proj.weight": _small(rng, HIDDEN, LLAMA_INTERMEDIATE),
        f"{prefix}.input_layernorm.weight": _ones(HIDDEN),
        f"{prefix}.post_attention_layernorm.weight": _ones(HIDDEN),
    }


def _llama_attention_config() -> dict:
    return {
        "num_attention_heads": LLAMA_HEADS,
        "num_key_value_heads": LLAMA_KV_HEADS,
        "head_dim": LLAMA_HEAD_DIM,  # CPU attention rejects head size 16
        "intermediate_size": LLAMA_INTERMEDIATE,
    }


def write_llama_target(path: Path, seed: int = 0) -> TinyTarget:
    """(a) A random 8-layer Llama, head_dim 32, vocab 512."""
    rng = _rng(seed)
    embed, perm, draft_vocab = _bigram_world(rng)
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        **_common_config(),
        **_llama_attention_config(),
        "num_hidden_layers": NUM_TARGET_LAYERS,
    }
    tensors = {"model.embed_tokens.weight": embed, "model.norm.weight": _ones(HIDDEN),
               "lm_head.weight": _lm_head_for(embed, perm, np.arange(VOCAB), steps=1)}
    for i in range(NUM_TARGET_LAYERS):
        tensors |= _llama_layer(rng, f"model.layers.{i}", HIDDEN)
    tensors |= _flip_b_mlp(f"model.layers.{FLIP_LAYER}", LLAMA_INTERMEDIATE)
    return TinyTarget(_write(path, config, tensors), config, embed, perm, draft_vocab)


# -- (b) kimi_k2 (DeepSeek-V3 MLA) target -------------------------------------------------------

MLA_HEADS = 2
MLA_Q_LORA_RANK = 64
MLA_KV_LORA_RANK = 512    # CPU MLA supports only DeepSeek's 512 ...
MLA_ROPE_HEAD_DIM = 64    # ... and 64
MLA_NOPE_HEAD_DIM = 128
MLA_V_HEAD_DIM = 128
MLA_INTERMEDIATE = 256


def _mla_layer(rng: np.random.Generator, prefix: str) -> dict[str, np.ndarray]:
    qk_head = MLA_NOPE_HEAD_DIM + MLA_ROPE_HEAD_DIM
    a = f"{prefix}.self_attn"
    return {
        f"{a}.q_a_proj.weight": _small(rng, MLA_Q_LORA_RANK, HIDDEN),
        f"{a}.q_a_layernorm.weight": _ones(MLA_Q_LORA_RANK),
        f"{a}.q_b_proj.weight": _small(rng, MLA_HEADS * qk_head, MLA_Q_LORA_RANK),
        f"{a}.kv_a_proj_with_mqa.weight": _small(rng, MLA_KV_LORA_RANK + MLA_ROPE_HEAD_DIM, HIDDEN),
        f"{a}.kv_a_layernorm.weight": _ones(MLA_KV_LORA_RANK),
        f"{a}.kv_b_proj.weight": _small(
            rng, MLA_HEADS * (MLA_NOPE_HEAD_DIM + MLA_V_HEAD_DIM), MLA_KV_LORA_RANK),
        f"{a}.o_proj.weight": _small(rng, HIDDEN, MLA_HEADS * MLA_V_HEAD_DIM),
        f"{prefix}.mlp.gate_proj.weight": _small(rng, MLA_INTERMEDIATE, HIDDEN),
        f"{prefix}.mlp.up_proj.weight": _small(rng, MLA_INTERMEDIATE, HIDDEN),
        f"{prefix}.mlp.down_proj.weight": _small(rng, HIDDEN, MLA_INTERMEDIATE),
        f"{prefix}.input_layernorm.weight": _ones(HIDDEN),
        f"{prefix}.post_attention_layernorm.weight": _ones(HIDDEN),
    }


def write_kimi_k2_target(path: Path, seed: int = 1) -> TinyTarget:
    """(b) A `kimi_k2` DeepSeek-V3 MLA target: 8 dense layers (first_k_dense_replace = all)."""
    rng = _rng(seed)
    embed, perm, draft_vocab = _bigram_world(rng)
    config = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "kimi_k2",
        **_common_config(),
        "num_hidden_layers": NUM_TARGET_LAYERS,
        "num_attention_heads": MLA_HEADS,
        "num_key_value_heads": MLA_HEADS,
        "intermediate_size": MLA_INTERMEDIATE,
        "q_lora_rank": MLA_Q_LORA_RANK,
        "kv_lora_rank": MLA_KV_LORA_RANK,
        "qk_rope_head_dim": MLA_ROPE_HEAD_DIM,
        "qk_nope_head_dim": MLA_NOPE_HEAD_DIM,
        "v_head_dim": MLA_V_HEAD_DIM,
        "rope_scaling": None,
        # MoE fields present (the config class expects them) but unused: every layer is dense.
        "first_k_dense_replace": NUM_TARGET_LAYERS,
        "moe_layer_freq": 1,
        "n_routed_experts": 4,
        "n_shared_experts": 1,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 64,
        "n_group": 1,
        "topk_group": 1,
        "topk_method": "noaux_tc",
        "scoring_func": "sigmoid",
        "norm_topk_prob": True,
        "routed_scaling_factor": 1.0,
    }
    tensors = {"model.embed_tokens.weight": embed, "model.norm.weight": _ones(HIDDEN),
               "lm_head.weight": _lm_head_for(embed, perm, np.arange(VOCAB), steps=1)}
    for i in range(NUM_TARGET_LAYERS):
        tensors |= _mla_layer(rng, f"model.layers.{i}")
    tensors |= _flip_b_mlp(f"model.layers.{FLIP_LAYER}", MLA_INTERMEDIATE)
    return TinyTarget(_write(path, config, tensors), config, embed, perm, draft_vocab)


# -- (c), (d) EAGLE-3 drafters ------------------------------------------------------------------

def _drafter_tensors(target: TinyTarget, layer_prefix: str, seed: int) -> dict[str, np.ndarray]:
    """One Llama-style EAGLE-3 layer; fc copies the last aux state; lm_head predicts x_{t+2}."""
    rng = _rng(seed)
    num_aux = len(target.aux_layer_ids)
    fc = np.zeros((HIDDEN, num_aux * HIDDEN), dtype=np.float32)
    fc[:, (num_aux - 1) * HIDDEN:] = np.eye(HIDDEN, dtype=np.float32)
    draft_vocab = target.draft_vocab
    tensors = {
        "fc.weight": fc,
        "norm.weight": _ones(HIDDEN),
        "lm_head.weight": _lm_head_for(target.embed, target.perm, draft_vocab, steps=2, b_sign=-1.0),
        # Offsets, not ids: target_id = draft_id + d2t[draft_id].
        "d2t": (draft_vocab - np.arange(DRAFT_VOCAB)).astype(np.int64),
        f"{layer_prefix}.hidden_norm.weight": _ones(HIDDEN),
    }
    tensors |= _llama_layer(rng, layer_prefix, 2 * HIDDEN)
    return tensors


def _drafter_config(target: TinyTarget, architecture: str) -> dict:
    return {
        "architectures": [architecture],
        "model_type": "llama",
        **_common_config(),
        **_llama_attention_config(),
        "num_hidden_layers": 1,
        "draft_vocab_size": DRAFT_VOCAB,
        "target_hidden_size": target.config["hidden_size"],
    }


def write_eagle3_drafter_specforge(path: Path, target: TinyTarget, seed: int = 2) -> Path:
    """(c) SpecForge/EAGLE layout: `midlayer.*`, d2t + t2d, no embedding, and the layer ids only
    in `eagle_config`, as SpecForge writes them: output-of-layer ids (vLLM capture-before - 1)."""
    tensors = _drafter_tensors(target, "midlayer", seed)
    t2d = np.zeros(VOCAB, dtype=bool)
    t2d[target.draft_vocab] = True
    tensors["t2d"] = t2d
    config = _drafter_config(target, "LlamaForCausalLMEagle3")
    config["eagle_config"] = {
        "eagle_aux_hidden_state_layer_ids": [i - 1 for i in target.aux_layer_ids],
        "use_aux_hidden_state": True,
    }
    return _write(path, config, tensors)


def write_eagle3_drafter_vllm(path: Path, target: TinyTarget, seed: int = 2) -> Path:
    """(d) The same drafter (same weights for the same seed) as vLLM loads it natively:
    `layers.0.*`, d2t only, top-level capture-before `eagle_aux_hidden_state_layer_ids`."""
    tensors = _drafter_tensors(target, "layers.0", seed)
    config = _drafter_config(target, "Eagle3LlamaForCausalLM")
    config["eagle_aux_hidden_state_layer_ids"] = list(target.aux_layer_ids)
    return _write(path, config, tensors)
