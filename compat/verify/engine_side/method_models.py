"""Tiny drafters of methods other than EAGLE-3, for a target written by oracle_models.py.

Runs in the engine's interpreter (torch and safetensors come with every vLLM). As a script, printing one JSON line:

    python method_models.py draft_model TARGET_DIR DIR [VOCAB]   # the target's first 2 layers, as a draft model
    python method_models.py dflash TARGET_DIR DIR                # a z-lab layout DFlash drafter, random layer

- draft_model: the oracle target is a permutation bigram whatever its layers add (oracle_models.py), so its first
  two layers, embedding and head are a draft model that proposes what the target generates: every draft
  position is accepted. VOCAB other than the target's cuts the embedding and head to VOCAB rows: a draft of
  another vocabulary (what vLLM refuses, and verify refuses first).
- dflash: z-lab's layout (DFlashDraftModel, model_type qwen3, `dflash_config.target_layer_ids` output-of ids,
  `mask_token_id`, `block_size`; no embedding or head: the target's are shared). Its one layer is random, so it
  loads, drafts a block per step and is verified; what it proposes is not built to be right.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

DRAFT_LAYERS = 2
DFLASH_BLOCK = 4
DFLASH_TARGET_LAYERS = [0, 2, 5]  # output-of ids (vLLM reads them +1: the streams entering layers 1, 3, 6)


def draft_model(target: Path, path: Path, vocab: int | None = None) -> dict:
    config = json.loads((target / "config.json").read_text())
    tensors = load_file(str(target / "model.safetensors"))
    keep = {k: v for k, v in tensors.items() if not k.startswith("model.layers.") or int(k.split(".")[2]) < DRAFT_LAYERS}
    config["num_hidden_layers"] = DRAFT_LAYERS
    if vocab is not None and vocab != config["vocab_size"]:
        for name in ("model.embed_tokens.weight", "lm_head.weight"):
            keep[name] = keep[name][:vocab].clone()
        config["vocab_size"] = vocab
    return _write(path, config, keep)


def dflash(target: Path, path: Path, seed: int = 5) -> dict:
    target_config = json.loads((target / "config.json").read_text())
    hidden, heads, kv_heads, head_dim = (target_config[k] for k in ("hidden_size", "num_attention_heads",
                                                                      "num_key_value_heads", "head_dim"))
    inter = target_config["intermediate_size"]
    g = torch.Generator().manual_seed(seed)

    def small(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * 0.03

    p = "layers.0"
    tensors = {
        f"{p}.self_attn.q_proj.weight": small(heads * head_dim, hidden),
        f"{p}.self_attn.k_proj.weight": small(kv_heads * head_dim, hidden),
        f"{p}.self_attn.v_proj.weight": small(kv_heads * head_dim, hidden),
        f"{p}.self_attn.o_proj.weight": small(hidden, heads * head_dim),
        f"{p}.self_attn.q_norm.weight": torch.ones(head_dim), f"{p}.self_attn.k_norm.weight": torch.ones(head_dim),
        f"{p}.mlp.gate_proj.weight": small(inter, hidden), f"{p}.mlp.up_proj.weight": small(inter, hidden),
        f"{p}.mlp.down_proj.weight": small(hidden, inter),
        f"{p}.input_layernorm.weight": torch.ones(hidden), f"{p}.post_attention_layernorm.weight": torch.ones(hidden),
        "norm.weight": torch.ones(hidden), "hidden_norm.weight": torch.ones(hidden),
        "fc.weight": small(hidden, len(DFLASH_TARGET_LAYERS) * hidden),
    }
    keys = ("vocab_size", "hidden_size", "max_position_embeddings", "rms_norm_eps", "rope_theta", "torch_dtype",
            "bos_token_id", "eos_token_id", "hidden_act", "num_attention_heads", "num_key_value_heads", "head_dim",
            "intermediate_size")
    config = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", **{k: target_config[k] for k in keys},
              "num_hidden_layers": 1, "attention_bias": False, "tie_word_embeddings": False,
              "num_target_layers": target_config["num_hidden_layers"], "block_size": DFLASH_BLOCK,
              "dflash_config": {"target_layer_ids": DFLASH_TARGET_LAYERS, "mask_token_id": target_config["vocab_size"] - 1,
                                "block_size": DFLASH_BLOCK}}
    return _write(path, config, tensors)


def _write(path: Path, config: dict, tensors: dict) -> dict:
    path.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(path / "model.safetensors"), metadata={"format": "pt"})
    (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return {"path": str(path), "config": config}


def main(argv: list[str]) -> int:
    kind = argv[1] if len(argv) > 1 else ""
    if kind == "draft_model" and len(argv) in (4, 5):
        manifest = draft_model(Path(argv[2]), Path(argv[3]), int(argv[4]) if len(argv) == 5 else None)
    elif kind == "dflash" and len(argv) == 4:
        manifest = dflash(Path(argv[2]), Path(argv[3]))
    else:
        print("usage: method_models.py draft_model TARGET_DIR DIR [VOCAB] | dflash TARGET_DIR DIR", file=sys.stderr)
        return 2
    print(json.dumps(manifest))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
