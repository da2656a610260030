"""The agreement corpus: launch lines for every speculative method a vLLM release has (its `speculative_config` fact's
`method` choices), each as it should run and with faults of three classes, over tiny models written here (config.json
only: nothing the configuration build reads needs weights, and no hub is asked):

- a field the method needs that the line leaves out (no num_speculative_tokens, no model);
- two options that must agree (draft tensor parallel size and the target's, prompt_lookup_min and _max, a setting only
  another method takes, num_speculative_tokens and the drafter's n_predict, a --spec-* shortcut and the same key in the
  config, synthetic acceptance without the synthetic sampler);
- a path the release does not implement for the method (a drafter it cannot name a method for, a bound it refuses).

Each line is judged twice by tests/engine/test_validation_agreement.py: by doctor's static reading of the release's
validation (the release-validation check, --platform cpu) and by the release's own build in its venv (compat's
preflight, every line in one engine process).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128, "intermediate_size": 256,
         "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 32, "vocab_size": 512,
         "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "torch_dtype": "float32", "tie_word_embeddings": False,
         "bos_token_id": 1, "eos_token_id": 2}
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 256,
               "intermediate_size": 512, "moe_intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 4, "vocab_size": 512, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
               "kv_lora_rank": 512, "q_lora_rank": None, "qk_rope_head_dim": 64, "qk_nope_head_dim": 64, "v_head_dim": 64,
               "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2, "first_k_dense_replace": 2,
               "moe_layer_freq": 1, "n_group": 1, "topk_group": 1, "routed_scaling_factor": 1.0, "norm_topk_prob": True,
               "scoring_func": "sigmoid", "topk_method": "noaux_tc", "num_nextn_predict_layers": 1, "torch_dtype": "float32",
               "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2}

MODELS: dict[str, dict] = {
    "target": LLAMA,
    "mtp-target": DEEPSEEK_V3,
    "eagle3-drafter": {**LLAMA, "architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1, "draft_vocab_size": 512},
    "eagle-drafter": {**LLAMA, "num_hidden_layers": 1},  # EAGLE-1: vLLM names the class EagleLlamaForCausalLM
    "small-llama": {**LLAMA, "num_hidden_layers": 2},  # a draft model
    "other-vocab-llama": {**LLAMA, "num_hidden_layers": 2, "vocab_size": 1024},
    "medusa-heads": {"architectures": ["MedusaModel"], "model_type": "medusa", "hidden_size": 128, "vocab_size": 512,
                     "num_heads": 3, "num_hidden_layers": 1},
    "mlp-speculator": {"architectures": ["MLPSpeculatorPreTrainedModel"], "model_type": "mlp_speculator", "n_predict": 3,
                       "emb_dim": 128, "inner_dim": 128, "vocab_size": 512, "top_k_tokens_per_head": [1, 1, 1],
                       "n_candidates": 1},
    "plain-drafter": {**LLAMA, "num_hidden_layers": 1},  # no method in its name or its type
    "dflash-drafter": {**LLAMA, "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "num_hidden_layers": 1},
}
# what each method drafts with (None: no drafter: the target's own heads, or none at all)
DRAFTER = {"eagle": "eagle-drafter", "eagle3": "eagle3-drafter", "draft_model": "small-llama", "medusa": "medusa-heads",
           "mlp_speculator": "mlp-speculator", "dflash": "dflash-drafter", "dspark": "eagle3-drafter"}
NO_DRAFTER = ("ngram", "ngram_gpu", "suffix", "extract_hidden_states")


@dataclass
class Case:
    label: str
    spec: dict | None  # --speculative-config (None: not given)
    target: str = "target"
    extra: list[str] = field(default_factory=list)  # more words of the line (a shortcut, -tp)

    def words(self, root: Path) -> list[str]:
        out = [str(root / self.target)]
        if self.spec is not None:
            spec = {k: (str(root / v) if k == "model" and isinstance(v, str) and (root / v).exists() else v)
                    for k, v in self.spec.items()}
            out += ["--speculative-config", json.dumps(spec)]
        return out + [str(root / w) if (root / w).exists() and w in MODELS else w for w in self.extra]

    def text(self, root: Path) -> str:
        import shlex

        return shlex.join(["vllm", "serve", *self.words(root)])


def write_models(root: Path) -> Path:
    for name, config in MODELS.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "config.json").write_text(json.dumps(config))
    return root


def _base(method: str, is_mtp: bool) -> Case:
    if is_mtp:
        return Case(f"{method}:ok", {"method": method, "num_speculative_tokens": 1}, target="mtp-target")
    if method in NO_DRAFTER:
        return Case(f"{method}:ok", {"method": method, "num_speculative_tokens": 3})
    if method == "custom_class":
        return Case(f"{method}:ok", {"method": method, "model": "my_pkg.MyProposer", "num_speculative_tokens": 3})
    drafter = DRAFTER.get(method, "small-llama")
    spec = {"method": method, "model": drafter, "num_speculative_tokens": 3}
    return Case(f"{method}:ok", spec)


def cases(methods: list[str], mtp_names: set[str], has_shortcuts: bool) -> list[Case]:
    """OK + faults for every method (the release's own names), then faults that need no method."""
    out: list[Case] = []
    for i, method in enumerate(methods):
        base = _base(method, method in mtp_names)
        out.append(base)
        spec = dict(base.spec or {})
        # a field it needs, left out
        out.append(Case(f"{method}:no-num-tokens", {k: v for k, v in spec.items() if k != "num_speculative_tokens"},
                        base.target))
        if "model" in spec:
            out.append(Case(f"{method}:no-model", {k: v for k, v in spec.items() if k != "model"}, base.target))
        # two settings that must agree, or a value the release bounds (rotated over the methods: each kind meets
        # several methods, and every method meets two kinds)
        for fault in (FAULTS[i % len(FAULTS)], FAULTS[(i + 3) % len(FAULTS)]):
            out.append(Case(f"{method}:{fault[0]}", {**spec, **fault[1]}, base.target, list(fault[2])))
        if method in ("ngram", "ngram_gpu"):
            out.append(Case(f"{method}:lookup-min-over-max", {**spec, "prompt_lookup_min": 5, "prompt_lookup_max": 2}))
            out.append(Case(f"{method}:lookup-max-only", {**spec, "prompt_lookup_max": 4}))
        if method == "mlp_speculator":
            out.append(Case(f"{method}:tokens-not-divisible", {**spec, "num_speculative_tokens": 4}))
    out += [
        Case("none:no-config", None),
        Case("none:drafter-no-method", {"model": "plain-drafter", "num_speculative_tokens": 3}),
        Case("none:eagle3-by-name", {"model": "eagle3-drafter", "num_speculative_tokens": 3}),
        Case("none:draft-model-other-vocab", {"method": "draft_model", "model": "other-vocab-llama",
                                              "num_speculative_tokens": 3}),
        Case("none:zero-tokens", {"method": "eagle3", "model": "eagle3-drafter", "num_speculative_tokens": 0}),
        Case("none:tensor-parallel-key", {"method": "eagle3", "model": "eagle3-drafter", "num_speculative_tokens": 3,
                                          "tensor_parallel_size": 1}),
        Case("none:draft-tp-2-of-tp-1", {"method": "eagle3", "model": "eagle3-drafter", "num_speculative_tokens": 3,
                                         "draft_tensor_parallel_size": 2}),
        Case("none:max-model-len-over-draft", {"method": "eagle3", "model": "eagle3-drafter", "num_speculative_tokens": 3,
                                               "max_model_len": 100000}),
    ]
    if has_shortcuts:
        out += [Case("none:shortcut-twice", {"method": "eagle3", "model": "eagle3-drafter", "num_speculative_tokens": 3},
                     extra=["--spec-tokens", "2"]),
                Case("none:shortcuts-only", None, extra=["--spec-method", "eagle3", "--spec-model", "eagle3-drafter",
                                                         "--spec-tokens", "3"])]
    return out


# (name, keys added to the config, words added to the line)
FAULTS: list[tuple[str, dict, tuple[str, ...]]] = [
    ("draft-tp-2", {"draft_tensor_parallel_size": 2}, ()),
    ("heterogeneous-vocab", {"use_heterogeneous_vocab": True}, ()),
    ("dspark-topk", {"dspark_draft_topk": 2}, ()),
    ("synthetic-length", {"synthetic_acceptance_length": 1.5}, ()),
    ("adaptive-and-local-argmax", {"enable_adaptive_verification": True, "use_local_argmax_reduction": True}, ()),
    ("draft-tp-1", {"draft_tensor_parallel_size": 1}, ()),
    ("zero-tokens", {"num_speculative_tokens": 0}, ()),
    ("draft-tp-2-of-tp-2", {"draft_tensor_parallel_size": 2}, ("--tensor-parallel-size", "2")),
]
