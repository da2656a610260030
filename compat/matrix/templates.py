"""The matrix's columns: target families (their config.json) x drafter kinds (config.json + a safetensors file).

Doctor reads a target's config.json and a drafter's config and safetensors header (plus its two small vocab
maps), never the weights, so the templates carry the real config fields of each family (model_type,
architectures, layer count, hidden and vocab size, the MLA fields where the family has them) and drafters of
the real shapes whose weight bytes are a hole in a sparse file: a 7168-wide drafter takes a few hundred
kilobytes on disk. d2t and t2d are written in full (doctor reads their values).

Drafter kinds are what the trainers write (research checkpoint-formats.md; tools/behaviour_fixtures.py and
tests/doctor/doctor_models.py build the same shapes for the tests):
    speculators   Eagle3Speculator, transformer_layer_config, top-level capture-before ids (vLLM's convention)
    specforge     LlamaForCausalLMEagle3, midlayer.*, output-of ids in eagle_config, d2t + t2d
    modelopt      LlamaForCausalLMEagle3, layers.0.*, ids only in eagle_config beside ModelOpt's flags, d2t only
    no-ids        Eagle3LlamaForCausalLM, layers.0.*, no layer ids recorded anywhere
They are written once per template content under the cache (`write_templates`), atomically.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MLA = {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}
DRAFT_VOCAB = 32000
TEMPLATE_FORMAT = 2  # bump when what a template writes changes (2: the method kinds)


@dataclass(frozen=True)
class Family:
    id: str
    label: str  # a real model of the family, whose config the template copies
    config: dict[str, Any]

    @property
    def text(self) -> dict[str, Any]:
        return self.config.get("text_config") or self.config

    @property
    def layers(self) -> int:
        return int(self.text["num_hidden_layers"])


def _config(model_type: str, architecture: str, layers: int, hidden: int, vocab: int, **extra: Any) -> dict[str, Any]:
    return {"architectures": [architecture], "model_type": model_type, "num_hidden_layers": layers,
            "hidden_size": hidden, "vocab_size": vocab, "torch_dtype": "bfloat16", **extra}


_KIMI_K2 = _config("kimi_k2", "DeepseekV3ForCausalLM", 61, 7168, 163840, **MLA,
                   auto_map={"AutoConfig": "configuration_deepseek.DeepseekV3Config"})
FAMILIES: tuple[Family, ...] = (
    Family("llama", "Llama-3.1-8B-Instruct", _config("llama", "LlamaForCausalLM", 32, 4096, 128256)),
    Family("qwen3", "Qwen3-8B", _config("qwen3", "Qwen3ForCausalLM", 36, 4096, 151936)),
    Family("qwen3-moe", "Qwen3-30B-A3B", _config("qwen3_moe", "Qwen3MoeForCausalLM", 48, 2048, 151936)),
    Family("deepseek-v3", "DeepSeek-V3", _config("deepseek_v3", "DeepseekV3ForCausalLM", 61, 7168, 129280, **MLA)),
    Family("kimi-k2", "Kimi-K2-Instruct", _KIMI_K2),
    Family("kimi-k2.5", "Kimi-K2.5", _config("kimi_k25", "KimiK25ForConditionalGeneration", 61, 7168, 163840,
                                              text_config=dict(_KIMI_K2))),
    Family("glm4-moe", "GLM-4.5", _config("glm4_moe", "Glm4MoeForCausalLM", 92, 5120, 151552)),
    Family("gpt-oss", "gpt-oss-120b", _config("gpt_oss", "GptOssForCausalLM", 36, 2880, 201088)),
    Family("minimax", "MiniMax-M2", _config("minimax_m2", "MiniMaxM2ForCausalLM", 62, 3072, 200064)),
    Family("gemma3", "gemma-3-27b-it", _config("gemma3", "Gemma3ForConditionalGeneration", 62, 5376, 262208,
                                               text_config=_config("gemma3_text", "Gemma3ForCausalLM", 62, 5376, 262208))),
)
DRAFTER_KINDS: dict[str, str] = {
    "speculators": "speculators: capture-before ids (top level)",
    "specforge": "SpecForge: output-of ids (eagle_config)",
    "modelopt": "ModelOpt export: ids in eagle_config, convention unrecorded",
    "no-ids": "no layer ids recorded",
}


def family(name: str) -> Family:
    found = next((f for f in FAMILIES if f.id == name), None)
    if found is None:
        from compat.core.errors import UsageError

        raise UsageError(f"--family {name!r}: no such target family", hint="one of " + ", ".join(f.id for f in FAMILIES))
    return found


def output_of_ids(layers: int) -> list[int]:  # SpecForge's default for an n-layer target
    return [1, layers // 2 - 1, layers - 4]


def capture_before_ids(layers: int) -> list[int]:  # vLLM's and speculators' default
    return [2, layers // 2, layers - 3]


def drafter_config(fam: Family, kind: str) -> dict[str, Any]:
    text = fam.text
    hidden, vocab = text["hidden_size"], text["vocab_size"]
    heads = max(hidden // 128, 1)
    llama = {"model_type": "llama", "hidden_size": hidden, "num_attention_heads": heads, "num_key_value_heads": max(heads // 4, 1),
             "head_dim": 128, "intermediate_size": hidden * 3, "num_hidden_layers": 1, "rms_norm_eps": 1e-5,
             "hidden_act": "silu", "vocab_size": vocab, "draft_vocab_size": DRAFT_VOCAB, "max_position_embeddings": 8192,
             "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    if kind == "speculators":
        return {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3", "speculators_version": "0.3.0",
                "transformer_layer_config": {"architectures": ["LlamaForCausalLM"], **llama},
                "draft_vocab_size": DRAFT_VOCAB, "norm_before_residual": False, "target_hidden_size": None,
                "eagle_aux_hidden_state_layer_ids": capture_before_ids(fam.layers),
                "speculators_config": {"algorithm": "eagle3", "default_proposal_method": "greedy",
                                       "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                                       "verifier": {"name_or_path": fam.label, "architectures": list(fam.config["architectures"])}}}
    if kind == "specforge":
        return {"architectures": ["LlamaForCausalLMEagle3"], **llama,
                "eagle_config": {"eagle_aux_hidden_state_layer_ids": output_of_ids(fam.layers), "use_aux_hidden_state": True}}
    if kind == "modelopt":
        flags = {"use_input_layernorm_in_first_layer": True, "use_last_layernorm": True, "use_mtp_layernorm": False,
                 "next_layer_regular": True, "parallel_draft_step": 1, "parallel_draft_heads_num_layers": 1}
        return {"architectures": ["LlamaForCausalLMEagle3"], **llama,
                "eagle_config": {"eagle_aux_hidden_state_layer_ids": output_of_ids(fam.layers), "use_aux_hidden_state": True,
                                 **flags}}
    if kind == "no-ids":
        return {"architectures": ["Eagle3LlamaForCausalLM"], **llama, "norm_before_residual": False}
    raise ValueError(f"no drafter kind {kind!r}")


def drafter_tensors(fam: Family, kind: str, config: dict[str, Any]) -> dict[str, tuple[str, tuple[int, ...]]]:
    """name -> (dtype, shape), as the kind's trainer names them."""
    layer = config.get("transformer_layer_config") or config
    hidden, inter = layer["hidden_size"], layer["intermediate_size"]
    q, kv = layer["num_attention_heads"] * layer["head_dim"], layer["num_key_value_heads"] * layer["head_dim"]
    prefix = "midlayer." if kind == "specforge" else "layers.0."
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {
        f"{prefix}{n}.weight": ("BF16", (hidden,)) for n in ("input_layernorm", "hidden_norm", "post_attention_layernorm")}
    tensors.update({f"{prefix}self_attn.q_proj.weight": ("BF16", (q, 2 * hidden)),
                    f"{prefix}self_attn.k_proj.weight": ("BF16", (kv, 2 * hidden)),
                    f"{prefix}self_attn.v_proj.weight": ("BF16", (kv, 2 * hidden)),
                    f"{prefix}self_attn.o_proj.weight": ("BF16", (hidden, q)),
                    f"{prefix}mlp.gate_proj.weight": ("BF16", (inter, hidden)),
                    f"{prefix}mlp.up_proj.weight": ("BF16", (inter, hidden)),
                    f"{prefix}mlp.down_proj.weight": ("BF16", (hidden, inter)),
                    "fc.weight": ("BF16", (hidden, 3 * fam.text["hidden_size"])), "norm.weight": ("BF16", (hidden,)),
                    "lm_head.weight": ("BF16", (DRAFT_VOCAB, hidden)), "d2t": ("I64", (DRAFT_VOCAB,))})
    if kind in ("speculators", "specforge"):
        tensors["t2d"] = ("BOOL", (fam.text["vocab_size"],))
    return tensors


_SIZE = {"BF16": 2, "I64": 8, "BOOL": 1}


def _vocab_maps(vocab: int) -> dict[str, bytes]:
    """A draft vocabulary of the first DRAFT_VOCAB/2 ids and every other id after them: d2t[i] = used[i] - i."""
    half = DRAFT_VOCAB // 2
    used = list(range(half)) + [half + 2 * i for i in range(DRAFT_VOCAB - half)]
    marks = bytearray(vocab)
    for u in used:
        marks[u] = 1
    return {"d2t": struct.pack(f"<{DRAFT_VOCAB}q", *(u - i for i, u in enumerate(used))), "t2d": bytes(marks)}


def write_safetensors(path: Path, tensors: dict[str, tuple[str, tuple[int, ...]]], data: dict[str, bytes]) -> None:
    """A valid safetensors file whose tensors not in `data` are zeros left as a hole (a sparse file)."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset, spans = 0, []
    for name in sorted(tensors):
        dtype, shape = tensors[name]
        size = _SIZE[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        spans.append((name, offset))
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    start = 8 + len(text)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(text)) + text)
        for name, at in spans:
            if name in data:
                handle.seek(start + at)
                handle.write(data[name])
        handle.truncate(start + offset)


@dataclass(frozen=True)
class Column:
    """One column of the matrix: a target directory and a drafter directory (templates, or the user's pair)."""
    id: str
    family: str
    drafter_kind: str
    target: Path
    drafter: Path
    label: str
    method: str = "eagle3"  # the compat.methods family diagnosed (method_templates.py: the other methods' kinds)
    drafterless: bool = False  # the method takes no drafter (MTP heads in the target, n-gram)


def templates_digest() -> str:
    from hashlib import sha256

    from compat.matrix.method_templates import METHOD_KINDS

    material = [TEMPLATE_FORMAT, [(f.id, f.config) for f in FAMILIES], sorted(DRAFTER_KINDS),
                [drafter_config(f, k) for f in FAMILIES for k in DRAFTER_KINDS],
                [(mk.kind, mk.families, [mk.config(family(f)) for f in mk.families] if mk.config else None) for mk in METHOD_KINDS]]
    return sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:16]


def write_templates(cache_dir: Path | None = None, families: list[str] | None = None,
                    kinds: list[str] | None = None, methods: list[str] | None = None) -> list[Column]:
    """The template columns (family x kind), written under the cache once per template content."""
    from compat.sources.cache import cache_root

    home = (Path(cache_dir) if cache_dir else cache_root()) / "matrix" / f"templates-{templates_digest()}"
    if not (home / "done").exists():
        home.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".templates-", dir=home.parent))
        try:
            _write_all(staging)
            (staging / "done").write_text("")
            os.replace(staging, home)
        except OSError:
            if not (home / "done").exists():
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    from compat.matrix.method_templates import METHOD_KINDS

    chosen = [f for f in FAMILIES if families is None or f.id in families]
    columns = [Column(f"{f.id}/{k}", f.id, k, home / "targets" / f.id, home / "drafters" / f.id / k, f"{f.id} · {k}")
               for f in chosen for k in DRAFTER_KINDS if (kinds is None or k in kinds) and (methods is None or "eagle3" in methods)]
    for mk in METHOD_KINDS:
        if (kinds is not None and mk.kind not in kinds) or (methods is not None and mk.method not in methods):
            continue
        for f in (f for f in chosen if f.id in mk.families):
            target = home / ("targets-mtp" if mk.method == "mtp" else "targets") / f.id
            columns.append(Column(f"{f.id}/{mk.kind}", f.id, mk.kind, target, home / "drafters" / f.id / mk.kind,
                                  f"{f.id} · {mk.kind}", mk.method, mk.config is None))
    return columns


def _write_all(root: Path) -> None:
    for fam in FAMILIES:
        target = root / "targets" / fam.id
        target.mkdir(parents=True)
        (target / "config.json").write_text(json.dumps(fam.config, indent=2))
        maps = _vocab_maps(fam.text["vocab_size"])
        for kind in DRAFTER_KINDS:
            drafter = root / "drafters" / fam.id / kind
            drafter.mkdir(parents=True)
            config = drafter_config(fam, kind)
            (drafter / "config.json").write_text(json.dumps(config, indent=2))
            write_safetensors(drafter / "model.safetensors", drafter_tensors(fam, kind, config), maps)
    _write_methods(root)


def _write_methods(root: Path) -> None:
    from compat.matrix import method_templates

    for mk in method_templates.METHOD_KINDS:
        for fam in (f for f in FAMILIES if f.id in mk.families):
            if mk.method == "mtp":
                target = root / "targets-mtp" / fam.id
                target.mkdir(parents=True, exist_ok=True)
                (target / "config.json").write_text(json.dumps(method_templates.family_config(fam, mk), indent=2))
            if mk.config is None:
                continue
            drafter = root / "drafters" / fam.id / mk.kind
            drafter.mkdir(parents=True)
            config = mk.config(fam)
            (drafter / "config.json").write_text(json.dumps(config, indent=2))
            write_safetensors(drafter / "model.safetensors", method_templates.tensors(config), {})
