"""A Kimi-K2 target and a SpecForge EAGLE-3 drafter for the doctor benchmarks, written with the stdlib only.

The doctor reads a target's config.json and a drafter's config.json plus its safetensors header and its vocab maps,
so the weights are tiny zeros and the maps real; names, shapes, dtypes and config fields are the ones SpecForge writes
for a Kimi-K2 target (tests/doctor/doctor_models.py builds the same pair with numpy for the tests).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

HIDDEN, HEADS, HEAD_DIM, INTERMEDIATE, VOCAB, DRAFT_VOCAB = 64, 2, 32, 128, 1024, 256
_DTYPE_SIZE = {"F32": 4, "I64": 8, "BOOL": 1}


def write_safetensors(path: Path, tensors: dict[str, tuple[str, tuple[int, ...]]], data: dict[str, bytes] | None = None) -> None:
    """A safetensors file of {name: (dtype, shape)}: zeros, or the bytes `data` gives for a tensor."""
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
        for name, (start, end) in ((n, h["data_offsets"]) for n, h in header.items()):
            out.write((data or {}).get(name) or bytes(end - start))


def vocab_maps() -> dict[str, bytes]:
    """A real vocabulary mapping, as SpecForge writes it: draft token i is target token 2i (d2t holds the offsets,
    int64), and t2d marks those target tokens (bool)."""
    used = [2 * i for i in range(DRAFT_VOCAB)]
    mask = bytearray(VOCAB)
    for token in used:
        mask[token] = 1
    return {"d2t": struct.pack(f"<{DRAFT_VOCAB}q", *(t - i for i, t in enumerate(used))), "t2d": bytes(mask)}


def kimi_k2_target(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    config = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2", "num_hidden_layers": 61,
              "hidden_size": HIDDEN, "vocab_size": VOCAB,
              "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}}
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def specforge_drafter(directory: Path, layer_ids: tuple[int, ...] = (1, 29, 57), prefix: str = "midlayer.") -> Path:
    """What SpecForge saves for a Kimi-K2 target (its layer names, output-of ids under eagle_config, real vocab maps);
    with prefix "layers.0." its fingerprint is gone and nothing settles how its ids were written."""
    directory.mkdir(parents=True, exist_ok=True)
    q = HEADS * HEAD_DIM
    shapes = {
        "input_layernorm.weight": (HIDDEN,), "hidden_norm.weight": (HIDDEN,), "post_attention_layernorm.weight": (HIDDEN,),
        "self_attn.q_proj.weight": (q, 2 * HIDDEN), "self_attn.k_proj.weight": (q, 2 * HIDDEN),
        "self_attn.v_proj.weight": (q, 2 * HIDDEN), "self_attn.o_proj.weight": (HIDDEN, q),
        "mlp.gate_proj.weight": (INTERMEDIATE, HIDDEN), "mlp.up_proj.weight": (INTERMEDIATE, HIDDEN),
        "mlp.down_proj.weight": (HIDDEN, INTERMEDIATE),
    }
    tensors = {prefix + name: ("F32", shape) for name, shape in shapes.items()}
    tensors.update({"fc.weight": ("F32", (HIDDEN, 3 * HIDDEN)), "norm.weight": ("F32", (HIDDEN,)),
                    "lm_head.weight": ("F32", (DRAFT_VOCAB, HIDDEN))})
    tensors["d2t"] = ("I64", (DRAFT_VOCAB,))
    tensors["t2d"] = ("BOOL", (VOCAB,))
    write_safetensors(directory / "model.safetensors", tensors, vocab_maps())
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
    """(target, drafter) under `directory`: the drafter's layer ids are settled by its trainer's fingerprint."""
    return kimi_k2_target(directory / "Kimi-K2-Instruct"), specforge_drafter(directory / "kimi-k2-eagle3")


def write_asking_pair(directory: Path) -> tuple[Path, Path]:
    """(target, drafter) under `directory`: nothing settles how the drafter's ids were written, so doctor asks
    --layer-ids-convention and reads the drafter both ways on every release (three diagnoses a release)."""
    return kimi_k2_target(directory / "Kimi-K2-Instruct"), specforge_drafter(directory / "unsettled-eagle3", prefix="layers.0.")
