"""Probe reports, targets and drafters written by hand for the offline check tests."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from compat.checks import Ctx, Drafter, Options
from compat.doctor.inputs import recognise
from compat.target import Target

HIDDEN, VOCAB, DRAFT_VOCAB = 64, 1024, 256
LAYER0 = ("input_layernorm.weight", "hidden_norm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight",
          "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight", "mlp.gate_proj.weight",
          "mlp.up_proj.weight", "mlp.down_proj.weight")

VLLM_REPORT = {
    "engine": "vllm", "version": "0.18.0", "source": {"kind": "released", "location": "/cache/vllm/0.18.0"},
    "eagle3_whitelist": {"present": False, "reason": "no config-time model-type whitelist"},
    "eagle3_targets": [
        {"class": "LlamaForCausalLM", "architectures": ["LlamaForCausalLM"], "interface": "SupportsEagle3",
         "location": "vllm/model_executor/models/llama.py:500"},
        {"class": "DeepseekV3ForCausalLM", "architectures": ["DeepseekV3ForCausalLM"], "interface": "SupportsEagle3",
         "location": "vllm/model_executor/models/deepseek_v2.py:1200"},
    ],
    "eagle3_drafters": ["Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle3"],
    "eagle3_drafter_classes": [{"architecture": "Eagle3LlamaForCausalLM", "location": "vllm/model_executor/models/registry.py:400"},
                               {"architecture": "LlamaForCausalLMEagle3", "location": "vllm/model_executor/models/registry.py:401"}],
    "aux_layer_ids": {
        "read_from_config": True, "default": "(2, n // 2, n - 3)",
        "default_location": "vllm/model_executor/models/interfaces.py:900",
        "runners": [{"runner": "v1", "location": "vllm/v1/worker/gpu_model_runner.py:4000",
                     "keys": [{"key": "eagle_aux_hidden_state_layer_ids", "where": "top-level", "offset": 0,
                               "location": "vllm/v1/worker/gpu_model_runner.py:4010"}]}],
    },
    "speculative_config": {"fields": [{"name": n} for n in ("method", "model", "num_speculative_tokens")],
                           "methods": ["eagle", "eagle3", "mtp"], "rejects_unknown_keys": True,
                           "location": "vllm/config/speculative.py:50", "methods_location": "vllm/config/speculative.py:40"},
    "cli_flags": [{"name": "--speculative-config", "location": "vllm/engine/arg_utils.py:900"}],
}

SGLANG_REPORT = {
    "engine": "sglang", "version": "0.5.8", "source": {"kind": "released", "location": "/cache/sglang/0.5.8"},
    "eagle3_whitelist": {"present": False, "reason": "SGLang has no whitelist"},
    "eagle3_targets": [
        {"class": "DeepseekV3ForCausalLM", "architectures": ["DeepseekV3ForCausalLM"], "layer_id_offset": 1,
         "location": "sglang/srt/models/deepseek_v2.py:2000", "method_location": "sglang/srt/models/deepseek_v2.py:2100"},
    ],
    "eagle3_drafters": ["LlamaForCausalLMEagle3"],
    "aux_layer_ids": {"read_from_config": True, "default": "[2, n // 2, n - 3]",
                      "keys": [{"key": "eagle_aux_hidden_state_layer_ids", "where": "eagle_config",
                                "location": "sglang/srt/model_executor/model_runner.py:470"}]},
    "cli_flags": [{"name": f"--speculative-{n}", "location": "sglang/srt/server_args.py:100",
                   **({"choices": ["EAGLE", "EAGLE3", "NEXTN"]} if n == "algorithm" else {})}
                  for n in ("algorithm", "draft-model-path", "num-steps", "eagle-topk", "num-draft-tokens")],
}


FACTS = Path(__file__).resolve().parent / "facts"  # drafter facts of a few releases (capture_facts.py)


def drafter_facts(engine: str, version: str) -> dict:
    """The captured drafter facts of the newest captured release not newer than `version`."""
    from packaging.version import Version

    captured = sorted((Version(p.stem.split("-", 1)[1]), p) for p in FACTS.glob(f"{engine}-*.json"))
    chosen = [p for v, p in captured if v <= Version(version)] or [captured[0][1]]
    return json.loads(chosen[-1].read_text())


def report(engine: str = "vllm", version: str | None = None, **overrides) -> dict:
    out = copy.deepcopy(VLLM_REPORT if engine == "vllm" else SGLANG_REPORT)
    if version:
        out["version"] = version
    out.update(drafter_facts(engine, out["version"]))
    out.update(overrides)
    return out


def target(model_type: str = "kimi_k2", architecture: str = "DeepseekV3ForCausalLM", layers: int | None = 61,
           vocab: int = VOCAB, config: dict | None = None) -> Target:
    return Target(Path("/models/target"), Path("/models/target/config.json"), dict(config or {}), model_type, model_type,
                  [architecture] if architecture else [], architecture, layers, vocab, HIDDEN, None)


def specforge_config(**changes) -> dict:
    config = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": HIDDEN,
              "num_hidden_layers": 1, "vocab_size": VOCAB, "draft_vocab_size": DRAFT_VOCAB,
              "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 29, 57], "use_aux_hidden_state": True}}
    config.update(changes)
    return {k: v for k, v in config.items() if v is not None}


def tensors(prefix: str = "midlayer.", *, d2t: bool = True, t2d: bool = True, draft_vocab: int = DRAFT_VOCAB,
            vocab: int = VOCAB) -> dict:
    out = {f"{prefix}{name}": ("F32", (HIDDEN,)) for name in LAYER0}
    out.update({"fc.weight": ("F32", (HIDDEN, 3 * HIDDEN)), "norm.weight": ("F32", (HIDDEN,)),
                "lm_head.weight": ("F32", (draft_vocab, HIDDEN))})
    if d2t:
        out["d2t"] = ("I64", (draft_vocab,))
    if t2d:
        out["t2d"] = ("BOOL", (vocab,))
    return out


class MapBytes:
    """A vocab map with content, as open_source gives them (dtype, shape, read())."""

    def __init__(self, dtype: str, shape: tuple[int, ...], data: bytes):
        self.dtype, self.shape, self._data = dtype, shape, data

    def read(self) -> bytes:
        return self._data


def vocab_maps(draft_vocab: int = DRAFT_VOCAB, vocab: int = VOCAB, *, used: list[int] | None = None) -> dict:
    """A consistent d2t/t2d pair: the draft vocabulary is every fourth target token (or `used`)."""
    used = used if used is not None else list(range(0, vocab, max(1, vocab // draft_vocab)))[:draft_vocab]
    d2t = b"".join((t - i).to_bytes(8, "little", signed=True) for i, t in enumerate(used))
    marked = set(used)
    t2d = bytes(1 if i in marked else 0 for i in range(vocab))
    return {"d2t": MapBytes("I64", (len(used),), d2t), "t2d": MapBytes("BOOL", (vocab,), t2d)}


def drafter(config: dict | None = None, names: dict | None = None, *, tgt: Target | None = None,
            path: str = "/models/drafter", maps: dict | None = None) -> Drafter:
    names = names or tensors()
    if maps is None:
        sizes = {n: shape[0] for n, (_, shape) in names.items() if n in ("d2t", "t2d")}
        maps = {k: v for k, v in vocab_maps(sizes.get("d2t", DRAFT_VOCAB), sizes.get("t2d", VOCAB)).items() if k in sizes}
    return recognise(Drafter(Path(path), config or specforge_config(), names, maps=maps), tgt)


def make_ctx(engine: str = "vllm", version: str | None = None, *, report_changes: dict | None = None,
             tgt: Target | None = None, draft: Drafter | None = None, options: Options | None = None) -> Ctx:
    tgt = tgt or target()
    return Ctx(report(engine, version, **(report_changes or {})), tgt, draft or drafter(tgt=tgt), options or Options())
