"""A Kimi-K2 target and a SpecForge EAGLE-3 drafter for the doctor benchmarks, written with the stdlib only.

The doctor reads a target's config.json and a drafter's config.json plus its safetensors *header*, so
the tensors are tiny zeros; names, shapes, dtypes and config fields are the ones SpecForge writes for a
Kimi-K2 target (tests/doctor/doctor_models.py builds the same pair with numpy for the tests).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

HIDDEN, HEADS, HEAD_DIM, INTERMEDIATE, VOCAB, DRAFT_VOCAB = 64, 2, 32, 128, 1024, 256
_DTYPE_SIZE = {"F32": 4, "I64": 8, "BOOL": 1}


def write_safetensors(path: Path, tensors: dict[str, tuple[str, tuple[int, ...]]]) -> None:
    """A safetensors file of zero tensors: {name: (dtype, shape)}."""
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        size = _DTYPE_SIZE[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(raw)) + raw)
        out.write(bytes(offset))


def kimi_k2_target(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    config = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2", "num_hidden_layers": 61,
              "hidden_size": HIDDEN, "vocab_size": VOCAB,
              "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}}
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def specforge_drafter(directory: Path, layer_ids: tuple[int, ...] = (1, 29, 57)) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    q = HEADS * HEAD_DIM
    shapes = {
        "midlayer.input_layernorm.weight": (HIDDEN,), "midlayer.hidden_norm.weight": (HIDDEN,),
        "midlayer.post_attention_layernorm.weight": (HIDDEN,),
        "midlayer.self_attn.q_proj.weight": (q, 2 * HIDDEN), "midlayer.self_attn.k_proj.weight": (q, 2 * HIDDEN),
        "midlayer.self_attn.v_proj.weight": (q, 2 * HIDDEN), "midlayer.self_attn.o_proj.weight": (HIDDEN, q),
        "midlayer.mlp.gate_proj.weight": (INTERMEDIATE, HIDDEN), "midlayer.mlp.up_proj.weight": (INTERMEDIATE, HIDDEN),
        "midlayer.mlp.down_proj.weight": (HIDDEN, INTERMEDIATE),
        "fc.weight": (HIDDEN, 3 * HIDDEN), "norm.weight": (HIDDEN,), "lm_head.weight": (DRAFT_VOCAB, HIDDEN),
    }
    tensors = {name: ("F32", shape) for name, shape in shapes.items()}
    tensors["d2t"] = ("I64", (DRAFT_VOCAB,))
    tensors["t2d"] = ("BOOL", (VOCAB,))
    write_safetensors(directory / "model.safetensors", tensors)
    config = {
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": HIDDEN,
        "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "head_dim": HEAD_DIM,
        "intermediate_size": INTERMEDIATE, "num_hidden_layers": 1, "rms_norm_eps": 1e-6,
        "vocab_size": VOCAB, "draft_vocab_size": DRAFT_VOCAB, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "max_position_embeddings": 4096,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": list(layer_ids), "use_aux_hidden_state": True},
    }
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def write_pair(directory: Path) -> tuple[Path, Path]:
    """(target, drafter) under `directory`."""
    return kimi_k2_target(directory / "Kimi-K2-Instruct"), specforge_drafter(directory / "kimi-k2-eagle3")
