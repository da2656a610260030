"""The inputs tools/record_behaviour.py runs compat on: targets and drafters, written with the stdlib only.

Only config.json files and safetensors headers matter to `compat doctor`; `compat convert` copies and
verifies the tensor bytes, so they are seeded pseudo-random values (the same bytes on every run). Names,
shapes and config fields are what the real producers write (tests/doctor/doctor_models.py,
tests/checkpoints/ckpt_builders.py): a SpecForge drafter has `midlayer.*`, d2t/t2d and output-of ids under
eagle_config; vLLM's layout has `layers.0.*` and top-level capture-before ids; speculators has
`speculators_model_type: eagle3` and a verifier.
"""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

HIDDEN, HEADS, HEAD_DIM, INTER, VOCAB, DRAFT_VOCAB = 64, 2, 32, 128, 1024, 256
MLA = dict(q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16)

# name -> (model_type, architecture, layers, extra config)
TARGETS = {
    "Kimi-K2-Instruct": ("kimi_k2", "DeepseekV3ForCausalLM", 61,
                         {"auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}}),
    "DeepSeek-V3": ("deepseek_v3", "DeepseekV3ForCausalLM", 61, {}),
    "Kimi-K2.5": ("kimi_k25", "KimiK25ForConditionalGeneration", 61, {
        "text_config": {"model_type": "kimi_k2", "architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61,
                        "hidden_size": HIDDEN, "vocab_size": VOCAB}}),
    "Llama-3.1-8B": ("llama", "LlamaForCausalLM", 32, {}),
    "Qwen3-8B": ("qwen3", "Qwen3ForCausalLM", 36, {}),
    "Qwen3-30B-A3B": ("qwen3_moe", "Qwen3MoeForCausalLM", 48, {}),
    "tiny-llama": ("llama", "LlamaForCausalLM", 8, {}),
}
DEEPSEEK_FAMILY = ("Kimi-K2-Instruct", "DeepSeek-V3", "Kimi-K2.5")
DTYPE = {"F32": ("f", 4), "F16": ("e", 2), "BF16": (None, 2), "I64": ("q", 8), "BOOL": ("?", 1)}


def write_target(work: Path, name: str) -> Path:
    model_type, architecture, layers, extra = TARGETS[name]
    config = {"architectures": [architecture], "model_type": model_type, "num_hidden_layers": layers,
              "hidden_size": HIDDEN, "vocab_size": VOCAB, "num_attention_heads": HEADS, "num_key_value_heads": HEADS,
              "head_dim": HEAD_DIM, "intermediate_size": INTER, "rms_norm_eps": 1e-6, "torch_dtype": "bfloat16",
              **extra}
    (work / name).mkdir(parents=True)
    (work / name / "config.json").write_text(json.dumps(config, indent=2))
    return work / name


def _values(dtype: str, count: int, rng: random.Random) -> bytes:
    code, _ = DTYPE[dtype]
    floats = [rng.random() * 2 - 1 for _ in range(count)]
    if dtype == "BF16":  # the upper half of each float32
        raw = struct.pack(f"<{count}f", *floats)
        return b"".join(raw[i + 2:i + 4] for i in range(0, len(raw), 4))
    return struct.pack(f"<{count}{code}", *floats)


def write_safetensors(path: Path, tensors: dict[str, tuple[str, tuple[int, ...], bytes | None]], seed: int) -> None:
    """{name: (dtype, shape, raw bytes or None for seeded values)}, names in sorted order, 8-byte aligned header."""
    rng = random.Random(seed)
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        count = 1
        for dim in shape:
            count *= dim
        raw = raw if raw is not None else _values(dtype, count, rng)
        assert len(raw) == count * DTYPE[dtype][1], name
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def vocab_maps(seed: int, zero: bool = False) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    used = sorted(random.Random(seed).sample(range(VOCAB), DRAFT_VOCAB))
    if zero:  # an untrained placeholder: d2t all zeros, t2d all false
        return {"d2t": ("I64", (DRAFT_VOCAB,), bytes(8 * DRAFT_VOCAB)), "t2d": ("BOOL", (VOCAB,), bytes(VOCAB))}
    d2t = struct.pack(f"<{DRAFT_VOCAB}q", *(u - i for i, u in enumerate(used)))
    marks = set(used)
    t2d = bytes(1 if i in marks else 0 for i in range(VOCAB))
    return {"d2t": ("I64", (DRAFT_VOCAB,), d2t), "t2d": ("BOOL", (VOCAB,), t2d)}


def layer_tensors(prefix: str, mla: bool = False, dtype: str = "BF16") -> dict:
    t = {f"{prefix}{n}.weight": (dtype, (HIDDEN,), None)
         for n in ("input_layernorm", "hidden_norm", "post_attention_layernorm")}
    if mla:
        qk = MLA["qk_nope_head_dim"] + MLA["qk_rope_head_dim"]
        t.update({
            f"{prefix}self_attn.q_a_proj.weight": (dtype, (MLA["q_lora_rank"], 2 * HIDDEN), None),
            f"{prefix}self_attn.q_a_layernorm.weight": (dtype, (MLA["q_lora_rank"],), None),
            f"{prefix}self_attn.q_b_proj.weight": (dtype, (HEADS * qk, MLA["q_lora_rank"]), None),
            f"{prefix}self_attn.kv_a_proj_with_mqa.weight": (dtype, (MLA["kv_lora_rank"] + MLA["qk_rope_head_dim"], 2 * HIDDEN), None),
            f"{prefix}self_attn.kv_a_layernorm.weight": (dtype, (MLA["kv_lora_rank"],), None),
            f"{prefix}self_attn.kv_b_proj.weight": (dtype, (HEADS * (MLA["qk_nope_head_dim"] + MLA["v_head_dim"]), MLA["kv_lora_rank"]), None),
            f"{prefix}self_attn.o_proj.weight": (dtype, (HIDDEN, HEADS * MLA["v_head_dim"]), None),
        })
    else:
        q = HEADS * HEAD_DIM
        t.update({f"{prefix}self_attn.{p}_proj.weight": (dtype, (q, 2 * HIDDEN), None) for p in "qkv"})
        t[f"{prefix}self_attn.o_proj.weight"] = (dtype, (HIDDEN, q), None)
    t.update({f"{prefix}mlp.gate_proj.weight": (dtype, (INTER, HIDDEN), None),
              f"{prefix}mlp.up_proj.weight": (dtype, (INTER, HIDDEN), None),
              f"{prefix}mlp.down_proj.weight": (dtype, (HIDDEN, INTER), None)})
    return t


LLAMA_FIELDS = {"hidden_size": HIDDEN, "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "head_dim": HEAD_DIM,
                "intermediate_size": INTER, "num_hidden_layers": 1, "rms_norm_eps": 1e-6, "hidden_act": "silu",
                "vocab_size": VOCAB, "max_position_embeddings": 4096, "rope_theta": 10000.0}


def output_of_ids(layers: int) -> list[int]:  # SpecForge's default for an n-layer target
    return [1, layers // 2 - 1, layers - 4]


def capture_before_ids(layers: int) -> list[int]:  # vLLM's and speculators' default
    return [2, layers // 2, layers - 3]


# drafter kind -> what it is (the recorder's list of drafters; "converted" is made by the compat under test)
DRAFTERS = {
    "sf": "SpecForge: midlayer.*, LlamaForCausalLMEagle3, output-of ids in eagle_config",
    "vllm-nested": "the seed case: layers.0.* names, LlamaForCausalLMEagle3, ids in eagle_config",
    "speculators": "speculators: Eagle3Speculator, transformer_layer_config, verifier, top-level ids",
    "toplevel": "vLLM layout: layers.0.*, Eagle3LlamaForCausalLM, top-level ids only (no fingerprint)",
    "noids": "vLLM layout without any layer ids",
    "nod2t": "SpecForge layout without d2t",
    "zerod2t": "SpecForge layout with d2t all zeros and t2d all false",
    "fourids": "SpecForge layout with a 4-id list (a trainer's dump naming the loss layer last)",
    "mla": "MLA drafter Eagle3DeepseekV2ForCausalLM with top-level and nested ids (TorchSpec-like)",
}


def write_drafter(work: Path, name: str, kind: str, layers: int, seed: int) -> Path:
    """A drafter of `kind` (DRAFTERS) for an n-layer target, under work/name."""
    path = work / name
    path.mkdir(parents=True)
    common = {"model_type": "llama", **LLAMA_FIELDS, "draft_vocab_size": DRAFT_VOCAB, "tie_word_embeddings": False,
              "torch_dtype": "bfloat16"}
    eagle_ids = {"eagle_aux_hidden_state_layer_ids": output_of_ids(layers), "use_aux_hidden_state": True}
    prefix, mla, maps = "midlayer.", False, vocab_maps(seed)
    if kind in ("sf", "nod2t", "zerod2t", "fourids"):
        config = {"architectures": ["LlamaForCausalLMEagle3"], **common, "eagle_config": eagle_ids}
        if kind == "fourids":
            config["eagle_config"] = {**eagle_ids, "eagle_aux_hidden_state_layer_ids": output_of_ids(layers) + [layers - 1]}
        if kind == "nod2t":
            del maps["d2t"]
        if kind == "zerod2t":
            maps = vocab_maps(seed, zero=True)
    elif kind == "vllm-nested":
        prefix = "layers.0."
        config = {"architectures": ["LlamaForCausalLMEagle3"], **common,
                  "eagle_config": {**eagle_ids, "eagle_aux_hidden_state_layer_ids": capture_before_ids(layers)}}
    elif kind in ("toplevel", "noids"):
        prefix = "layers.0."
        config = {"architectures": ["Eagle3LlamaForCausalLM"], **common, "norm_before_residual": False}
        if kind == "toplevel":
            config["eagle_aux_hidden_state_layer_ids"] = capture_before_ids(layers)
        del maps["t2d"]
    elif kind == "speculators":
        prefix = "layers.0."
        layer = {"architectures": ["LlamaForCausalLM"], **common}
        config = {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3", "speculators_version": "0.3.0",
                  "transformer_layer_config": layer, "draft_vocab_size": DRAFT_VOCAB, "norm_before_residual": False,
                  "target_hidden_size": None, "eagle_aux_hidden_state_layer_ids": capture_before_ids(layers),
                  "speculators_config": {"algorithm": "eagle3", "default_proposal_method": "greedy",
                                         "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                                         "verifier": {"name_or_path": "synthetic/target", "architectures": ["LlamaForCausalLM"]}}}
    elif kind == "mla":
        prefix, mla = "layers.0.", True
        fields = {k: v for k, v in common.items() if k not in ("num_key_value_heads", "head_dim")}
        config = {"architectures": ["Eagle3DeepseekV2ForCausalLM"], **fields, "model_type": "kimi_k2", **MLA,
                  "eagle_aux_hidden_state_layer_ids": capture_before_ids(layers), "eagle_config": eagle_ids}
    else:
        raise ValueError(kind)
    tensors = {**layer_tensors(prefix, mla), "fc.weight": ("BF16", (HIDDEN, 3 * HIDDEN), None),
               "norm.weight": ("BF16", (HIDDEN,), None), "lm_head.weight": ("BF16", (DRAFT_VOCAB, HIDDEN), None), **maps}
    write_safetensors(path / "model.safetensors", tensors, seed)
    (path / "config.json").write_text(json.dumps(config, indent=2))
    return path


def write_broken(work: Path) -> None:
    """Inputs that are not what they claim: for the error scenarios."""
    (work / "no-config").mkdir()
    (work / "no-config" / "model.safetensors").write_bytes(b"")
    (work / "bad-json").mkdir()
    (work / "bad-json" / "config.json").write_text("{not json")
    bad = work / "bad-header"
    bad.mkdir()
    (bad / "config.json").write_text((work / "sf-tiny-llama" / "config.json").read_text())
    (bad / "model.safetensors").write_bytes(struct.pack("<Q", 10 ** 9) + b"{}")
    (work / "empty-dir").mkdir()
    (work / "exists").mkdir()
    (work / "exists" / "keep.txt").write_text("an existing output\n")
    (work / "replace-me").mkdir()
    (work / "replace-me" / "old.txt").write_text("replaced by --force\n")
    (work / "not-a-tree" / "vllm").mkdir(parents=True)
