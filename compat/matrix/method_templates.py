"""The matrix's method dimension: drafter kinds of the methods beyond EAGLE-3, for the families that have them.

Each kind is what a trainer writes (the keys of SpecForge's configs/qwen3-8b-dflash.json and qwen3-8b-dspark.json,
speculators' dflash/dspark configs, DeepSpec's Qwen3DSparkModel), sized to the family; MTP reads the heads in the
target itself (families whose real config declares them: num_nextn_predict_layers) and n-gram takes no drafter.
The EAGLE-3 kinds of templates.py are method "eagle3". compat/matrix/build.py diagnoses each column with its method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

# a template family (templates.Family: id, config, text): templates.py imports this module, so it is not imported here



@dataclass(frozen=True)
class MethodKind:
    kind: str  # the column's drafter kind
    method: str  # the compat.methods family
    label: str
    families: tuple[str, ...]  # the template families it has a column for
    config: Callable[[Any], dict[str, Any]] | None  # None: no drafter (the method takes none)


def _block(fam: Any, n_layers: int = 5) -> dict[str, Any]:
    text = fam.text
    n = int(text["num_hidden_layers"])
    start, end = 1, n - 3
    ids = [int(round(start + i * (end - start) / (n_layers - 1))) for i in range(n_layers)]  # z-lab's default
    return {"model_type": "qwen3", "hidden_size": text["hidden_size"], "num_hidden_layers": n_layers, "num_target_layers": n,
            "num_attention_heads": max(text["hidden_size"] // 128, 1), "num_key_value_heads": max(text["hidden_size"] // 512, 1),
            "head_dim": 128, "intermediate_size": text["hidden_size"] * 3, "vocab_size": text["vocab_size"],
            "rms_norm_eps": 1e-6, "dtype": "bfloat16", "_ids": ids}


def specforge_dflash(fam: Any) -> dict[str, Any]:
    base = _block(fam)
    ids = base.pop("_ids")
    return {"architectures": ["DFlashDraftModel"], "auto_map": {"AutoModel": "dflash.DFlashDraftModel"}, "block_size": 16,
            **base, "dflash_config": {"mask_token_id": fam.text["vocab_size"] - 1, "target_layer_ids": ids}}


def specforge_dspark(fam: Any) -> dict[str, Any]:
    config = specforge_dflash(fam)
    config["architectures"], config["block_size"] = ["DSparkDraftModel"], 7
    config["auto_map"] = {"AutoModel": "dspark.DSparkDraftModel"}
    config["dflash_config"].update({"projector_type": "dspark", "markov_rank": 256, "markov_head_type": "vanilla",
                                    "enable_confidence_head": True, "confidence_head_alpha": 1.0})
    return config


def speculators_block(kind: str) -> Callable[[Any], dict[str, Any]]:
    def build(fam: Any) -> dict[str, Any]:
        base = _block(fam)
        ids = [i + 1 for i in base.pop("_ids")]  # capture-before
        config = {"speculators_model_type": kind, "architectures": [f"{'DFlash' if kind == 'dflash' else 'DSpark'}Speculator"],
                  "block_size": 8, "aux_hidden_state_layer_ids": ids, "mask_token_id": fam.text["vocab_size"] - 1,
                  "draft_vocab_size": fam.text["vocab_size"], "speculators_config": {"algorithm": kind},
                  "transformer_layer_config": base, "sample_from_anchor": kind == "dspark"}
        if kind == "dspark":
            config["markov_rank"] = 256
        return config
    return build


def deepspec_dspark(fam: Any) -> dict[str, Any]:
    base = _block(fam)
    ids = base.pop("_ids")
    return {"architectures": ["Qwen3DSparkModel"], **base, "block_size": 7, "markov_rank": 256, "target_layer_ids": ids}


METHOD_KINDS: tuple[MethodKind, ...] = (
    MethodKind("specforge-dflash", "dflash", "SpecForge / z-lab DFlash: output-of dflash_config.target_layer_ids",
               ("llama", "qwen3", "qwen3-moe", "gpt-oss"), specforge_dflash),
    MethodKind("speculators-dflash", "dflash", "speculators DFlash: capture-before aux_hidden_state_layer_ids",
               ("llama", "qwen3"), speculators_block("dflash")),
    MethodKind("specforge-dspark", "dspark", "SpecForge DSpark: bonus-anchor block, no sample_from_anchor written",
               ("qwen3",), specforge_dspark),
    MethodKind("speculators-dspark", "dspark", "speculators DSpark: sample_from_anchor written",
               ("qwen3",), speculators_block("dspark")),
    MethodKind("deepspec-dspark", "dspark", "DeepSpec dense DSpark (Qwen3DSparkModel): anchor-first block",
               ("qwen3",), deepspec_dspark),
    MethodKind("mtp-heads", "mtp", "the target's own MTP heads (no drafter)", ("deepseek-v3", "glm4-moe"), None),
    MethodKind("ngram", "ngram", "n-gram prompt lookup (no drafter)", ("llama",), None),
)
KIND_METHODS = {mk.kind: mk.method for mk in METHOD_KINDS}


def method_kind(kind: str) -> MethodKind | None:
    return next((mk for mk in METHOD_KINDS if mk.kind == kind), None)


def family_config(fam: Any, kind: MethodKind) -> dict[str, Any]:
    """The target's config for the kind: an MTP column's family declares its heads (DeepSeek-V3 and GLM-4.5 ship one)."""
    if kind.method == "mtp":
        return {**fam.config, "num_nextn_predict_layers": 1}
    return fam.config


def tensors(config: dict[str, Any]) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The block drafter's tensors, as its trainer names them (weights a hole in the file: doctor reads headers)."""
    layer = config.get("transformer_layer_config") or config
    hidden, inter = layer["hidden_size"], layer["intermediate_size"]
    q, kv = layer["num_attention_heads"] * layer["head_dim"], layer["num_key_value_heads"] * layer["head_dim"]
    ids = (config.get("dflash_config") or {}).get("target_layer_ids") or config.get("target_layer_ids") or config.get(
        "aux_hidden_state_layer_ids") or []
    out: dict[str, tuple[str, tuple[int, ...]]] = {"fc.weight": ("BF16", (hidden, len(ids) * hidden)),
                                                   "hidden_norm.weight": ("BF16", (hidden,)), "norm.weight": ("BF16", (hidden,))}
    for i in range(int(layer["num_hidden_layers"])):
        out.update({f"layers.{i}.self_attn.q_proj.weight": ("BF16", (q, hidden)),
                    f"layers.{i}.self_attn.k_proj.weight": ("BF16", (kv, hidden)),
                    f"layers.{i}.self_attn.v_proj.weight": ("BF16", (kv, hidden)),
                    f"layers.{i}.self_attn.o_proj.weight": ("BF16", (hidden, q)),
                    f"layers.{i}.mlp.down_proj.weight": ("BF16", (hidden, inter))})
    return out
