"""EAGLE-3 serving failures reported upstream, each as the shapes its thread gives (configs, tensor names and
shapes, launch settings), the doctor check that answers it, and where it holds.

docs/failure-modes.md is the table of these; its "holds in" column is computed here, by running the check
on every release (`holds_in`), never written by hand (tools/failure_modes.py re-renders it). Sizes are
scaled down (hidden 64, vocab 1024) where only the structure matters; the ids, layer counts, names and
the ratios the threads report (an fc four aux states wide, a draft vocab smaller than the target's) are
the threads' own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
from safetensors.numpy import save_file

from compat.checks import FAIL, PASS, Ctx, Options, get_check
from doctor_models import (DRAFT_VOCAB, HEAD_DIM, HEADS, HIDDEN, INTERMEDIATE, VOCAB, kimi_k25_target, llama_layer,
                           specforge_drafter, write_target)

Build = Callable[[Path], "Pair"]


@dataclass
class Pair:
    """What doctor is given: a target and a drafter directory, and the user's answers and options."""

    target: Path
    drafter: Path
    convention: str | None = None
    layer_ids: list[int] | None = None
    options: Options = field(default_factory=Options)


@dataclass(frozen=True)
class Mode:
    key: str  # the test id, and the doc table's key
    title: str  # the mode, in a line
    thread: str  # the upstream issue or PR
    engines: tuple[str, ...]
    check: str  # the doctor check that answers it
    build: Build
    says: str  # words of the check's detail when the mode holds
    sample: dict[str, str]  # engine -> a release it holds in (the per-mode test runs doctor there)
    clear: dict[str, str] = field(default_factory=dict)  # engine -> a release it does not hold in
    requires: tuple[str, ...] = ()  # checks that pass where the mode is this one (not an earlier failure)
    holds: Callable[[dict[str, Any]], bool] = lambda result: result["verdict"] == FAIL


# -- the shapes ----------------------------------------------------------------------------------------------
def _config(architecture: str = "LlamaForCausalLMEagle3", *, vocab: int = VOCAB, draft_vocab: int = DRAFT_VOCAB,
            **extra: Any) -> dict[str, Any]:
    config = {"architectures": [architecture], "model_type": "llama", "hidden_size": HIDDEN, "num_attention_heads": HEADS,
              "num_key_value_heads": HEADS, "head_dim": HEAD_DIM, "intermediate_size": INTERMEDIATE,
              "num_hidden_layers": 1, "rms_norm_eps": 1e-6, "vocab_size": vocab, "draft_vocab_size": draft_vocab,
              "tie_word_embeddings": False, "torch_dtype": "bfloat16", "max_position_embeddings": 4096}
    config.update(extra)
    return {k: v for k, v in config.items() if v is not None}


def drafter(directory: Path, config: dict[str, Any], *, prefix: str = "layers.0.", aux: int = 3, d2t: Any = "offsets",
            t2d: bool = True, extra: dict[str, tuple[int, ...]] | None = None, files: dict[str, str] | None = None) -> Path:
    """A drafter directory: config.json and one safetensors file of the right names and shapes.
    d2t: "offsets" (a consistent map), "arange", "zeros" or None (no map)."""
    directory.mkdir(parents=True, exist_ok=True)
    draft, vocab = config.get("draft_vocab_size", VOCAB), config.get("vocab_size", VOCAB)
    shapes = {**llama_layer(prefix), "fc.weight": (HIDDEN, aux * HIDDEN), "norm.weight": (HIDDEN,),
              "lm_head.weight": (draft, HIDDEN), **(extra or {})}
    rng = np.random.default_rng(0)
    tensors = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}
    used = np.sort(rng.choice(vocab, size=draft, replace=False))
    maps = {"offsets": (used - np.arange(draft)), "arange": np.arange(draft), "zeros": np.zeros(draft)}
    if d2t is not None:
        tensors["d2t"] = maps[d2t].astype(np.int64)
    if t2d:
        mask = np.zeros(vocab, dtype=bool)
        mask[used] = True
        tensors["t2d"] = mask
    save_file(tensors, str(directory / "model.safetensors"))
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    for name, text in (files or {}).items():
        (directory / name).write_text(text)
    return directory


def target(directory: Path, model_type: str, architecture: str, layers: int, **extra: Any) -> Path:
    return write_target(directory, model_type=model_type, architecture=architecture, layers=layers, extra=extra)


def kimi_k2(directory: Path) -> Path:
    return target(directory, "kimi_k2", "DeepseekV3ForCausalLM", 61,
                  auto_map={"AutoConfig": "configuration_deepseek.DeepseekV3Config"})


def top_level(ids: list[int], **extra: Any) -> dict[str, Any]:
    return _config("Eagle3LlamaForCausalLM", eagle_aux_hidden_state_layer_ids=ids, **extra)


def nested(ids: list[int], **extra: Any) -> dict[str, Any]:
    return _config(eagle_config={"eagle_aux_hidden_state_layer_ids": ids, "use_aux_hidden_state": True}, **extra)


def tokenizer_files(vocab: int, specials: dict[str, int], eos: str) -> dict[str, str]:
    vocab_map = {f"t{i}": i for i in range(vocab)}
    added = [{"id": i, "content": t, "special": True} for t, i in specials.items()]
    body = {"version": "1.0", "added_tokens": added, "model": {"type": "BPE", "vocab": vocab_map, "merges": []}}
    config = {"eos_token": eos, "chat_template": "{{ messages }}",
              "added_tokens_decoder": {str(i): {"content": t, "special": True} for t, i in specials.items()}}
    return {"tokenizer.json": json.dumps(body), "tokenizer_config.json": json.dumps(config)}


# -- the modes -----------------------------------------------------------------------------------------------
def _qwen3_8b(tmp: Path) -> Pair:
    """vllm#22152: Qwen3-8B (model_type qwen3) with an EAGLE-3 head from the official project."""
    return Pair(target(tmp / "Qwen3-8B", "qwen3", "Qwen3ForCausalLM", 36),
                drafter(tmp / "qwen3_8b_eagle3", nested([1, 17, 32]), prefix="midlayer."))


def _kimi_k2_specforge(tmp: Path) -> Pair:
    """vllm#31254, vllm#32079: Kimi-K2-Instruct with AQ-MedAI/Kimi-K2-Instruct-eagle3 (SpecForge layout)."""
    return Pair(kimi_k2(tmp / "Kimi-K2-Instruct"), specforge_drafter(tmp / "Kimi-K2-Instruct-eagle3"))


def _qwen3_moe(tmp: Path) -> Pair:
    """vllm#25134: Qwen3-30B-A3B (qwen3_moe, 48 layers) with a SpecForge drafter."""
    return Pair(target(tmp / "Qwen3-30B-A3B-FP8", "qwen3_moe", "Qwen3MoeForCausalLM", 48),
                drafter(tmp / "Qwen3-30B-A3B-eagle3", nested([1, 23, 44]), prefix="midlayer."))


def _kimi_k25(tmp: Path) -> Pair:
    """vllm#36777, sglang#19689: Kimi-K2.5 (a kimi_k25 wrapper around a 61-layer kimi_k2) with a Llama EAGLE-3 head."""
    return Pair(kimi_k25_target(tmp / "Kimi-K2.5"), specforge_drafter(tmp / "kimi-k2.5-eagle3"))


def _d2t_missing(tmp: Path) -> Pair:
    """NeMo-Automodel#2447: a compressed draft vocab (32000 of 128256; scaled 256 of 1024) with the map left in a side file."""
    return Pair(target(tmp / "Llama-3.1-8B-Instruct", "llama", "LlamaForCausalLM", 32),
                drafter(tmp / "automodel-eagle3", top_level([2, 16, 29]), d2t=None, t2d=False,
                        files={"eagle_meta.pt": "selected_token_ids"}))


def _d2t_arange(tmp: Path) -> Pair:
    """verl-SpeCo#67: a full-vocabulary draft whose d2t defaults to arange (ids, not offsets): draft i -> target 2i."""
    return Pair(target(tmp / "Qwen3-8B", "qwen3", "Qwen3ForCausalLM", 36),
                drafter(tmp / "speco-eagle3", top_level([2, 18, 33], draft_vocab=VOCAB), d2t="arange", t2d=False))


def _d2t_zeros(tmp: Path) -> Pair:
    """EAGLE#222: d2t all zeros with a draft vocab smaller than the target's (an untrained placeholder map)."""
    return Pair(target(tmp / "Llama-3.1-8B-Instruct", "llama", "LlamaForCausalLM", 32),
                drafter(tmp / "EAGLE3-LLaMA3.1-Instruct-8B", top_level([2, 16, 29]), d2t="zeros", t2d=False))


def _no_ids(tmp: Path) -> Pair:
    """vllm#50170: nvidia/Llama-3.3-70B-Instruct-Eagle3 omits its layer ids; the engines feed (2, 40, 77)."""
    return Pair(target(tmp / "Llama-3.3-70B-Instruct", "llama", "LlamaForCausalLM", 80),
                drafter(tmp / "Llama-3.3-70B-Instruct-Eagle3", _config(), prefix="midlayer."))


def _final_layer_kimi(tmp: Path) -> Pair:
    """vllm#46788: aux id 61 = num_hidden_layers on Kimi-K2, the last layer's output."""
    return Pair(kimi_k2(tmp / "Kimi-K2-Instruct"), drafter(tmp / "kimi-k2-eagle3-final", top_level([2, 30, 61])))


def _gpt_oss_v3(tmp: Path) -> Pair:
    """sglang#32226: gpt-oss-120b (36 layers) with nvidia/gpt-oss-120b-Eagle3-v3: ids [24, 30, 36], norm_before_fc."""
    config = _config(eagle_config={"eagle_aux_hidden_state_layer_ids": [24, 30, 36], "use_aux_hidden_state": True,
                                   "norm_before_fc": True})
    return Pair(target(tmp / "gpt-oss-120b", "gpt_oss", "GptOssForCausalLM", 36),
                drafter(tmp / "gpt-oss-120b-Eagle3-v3", config, extra={"input_norm.weight": (3 * HIDDEN,)}),
                convention="capture-before")


def _nvidia_norm_before_fc(tmp: Path) -> Pair:
    """vllm#42143: an NVIDIA gpt-oss EAGLE-3 checkpoint keeps norm_before_fc inside eagle_config."""
    config = _config("LlamaForCausalLMEagle3", eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 17, 32],
                                                             "use_aux_hidden_state": True, "norm_before_fc": True})
    return Pair(target(tmp / "gpt-oss-120b", "gpt_oss", "GptOssForCausalLM", 36),
                drafter(tmp / "gpt-oss-120b-Eagle3", config, prefix="midlayer."), convention="output-of")


def _kimi_k25_input_to(tmp: Path) -> Pair:
    """sglang#25454: lightseekorg/kimi-k2.5-eagle3 style ids written input-to-layer (first id 2) on Kimi-K2.5."""
    return Pair(kimi_k25_target(tmp / "Kimi-K2.5"), drafter(tmp / "kimi-k2.5-eagle3", nested([2, 30, 58])),
                convention="capture-before")


def _nested_only(tmp: Path) -> Pair:
    """llama.cpp#27040: SyzygyResearch/DeepSeek-V4-Flash-EAGLE3.1 keeps its ids only in eagle_config ([1, 21, 40],
    43 layers); a reader of the top-level key falls back to (2, 21, 40). A 43-layer Llama target stands in for
    DeepSeek-V4 (served by vLLM from 0.29 only), so every release's reading shows."""
    return Pair(target(tmp / "target-43-layers", "llama", "LlamaForCausalLM", 43),
                drafter(tmp / "DeepSeek-V4-Flash-EAGLE3.1", nested([1, 21, 40]), prefix="midlayer."))


def _fed_default(result: dict[str, Any]) -> bool:
    return result["verdict"] == FAIL and any("default" in feed["how"] for feed in result.get("fed") or [])


def _minimax(tmp: Path) -> Pair:
    """vllm#43671: MiniMax-M2.5 (62 layers) with thoughtworks/MiniMax-M2.5-Eagle3, trained by SpecForge (output-of)."""
    return Pair(target(tmp / "MiniMax-M2.5", "minimax_m2", "MiniMaxM2ForCausalLM", 62),
                specforge_drafter(tmp / "MiniMax-M2.5-Eagle3", layer_ids=[1, 30, 58]))


def _method_eagle(tmp: Path) -> Pair:
    """vllm#21737: an EAGLE-3 head launched with "method": "eagle" (EAGLE-1)."""
    return Pair(target(tmp / "Llama-3.1-8B-Instruct", "llama", "LlamaForCausalLM", 32),
                drafter(tmp / "EAGLE3-LLaMA3.1-Instruct-8B", top_level([2, 16, 29])),
                convention="capture-before", options=Options(extra_spec={"method": "eagle"}))


def _disable_by_batch_size(tmp: Path) -> Pair:
    """vllm#35060: a --speculative-config that still carries disable_by_batch_size."""
    return Pair(target(tmp / "Llama-3.1-8B-Instruct", "llama", "LlamaForCausalLM", 32),
                drafter(tmp / "EAGLE3-LLaMA3.1-Instruct-8B", top_level([2, 16, 29])),
                convention="capture-before", options=Options(extra_spec={"disable_by_batch_size": 4}))


def _sglang_line(tmp: Path, extra: str, *, env: str = "", algorithm: str = "EAGLE3") -> Pair:
    """A Kimi-K2 (MLA, 61 layers) target with a SpecForge Llama head, launched by the thread's SGLang line."""
    from compat.launch_line import read_line

    tgt = target(tmp / "Kimi-K2-Instruct", "kimi_k2", "DeepseekV3ForCausalLM", 61, kv_lora_rank=512, qk_rope_head_dim=64,
                 auto_map={"AutoConfig": "configuration_deepseek.DeepseekV3Config"})
    head = specforge_drafter(tmp / "Kimi-K2-eagle3", layer_ids=[1, 29, 57])
    line = (f"{env}python -m sglang.launch_server --model-path {tgt} --trust-remote-code --speculative-algorithm "
            f"{algorithm} --speculative-draft-model-path {head} {extra}")
    return Pair(tgt, head, convention="output-of", options=Options(launch=read_line(line)))


def _sglang_eagle_algorithm(tmp: Path) -> Pair:
    """sglang#21272: an EAGLE-3 head launched with --speculative-algorithm EAGLE (accept length exactly 1.00)."""
    return _sglang_line(tmp, "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4",
                        algorithm="EAGLE")


def _draft_attention_backend(tmp: Path) -> Pair:
    """sglang#23490: Kimi-K2 served on trtllm_mla; the Llama (MHA) head inherits it and fails at start-up."""
    return _sglang_line(tmp, "--attention-backend trtllm_mla --speculative-num-steps 3 --speculative-eagle-topk 1 "
                        "--speculative-num-draft-tokens 4")


def _spec_v2_topk(tmp: Path) -> Pair:
    """sglang#14077: SGLANG_ENABLE_SPEC_V2=1 with --speculative-eagle-topk 4 (a tree) under the overlap scheduler."""
    return _sglang_line(tmp, "--speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8",
                        env="SGLANG_ENABLE_SPEC_V2=1 ")


def _two_layers(tmp: Path) -> Pair:
    """SpecForge#129: a qwen3-coder-30B draft saved with num_hidden_layers 2 ("eagle3 only supports one layer")."""
    extra = {k.replace("layers.0.", "layers.1."): v for k, v in llama_layer("layers.0.").items()}
    return Pair(target(tmp / "Qwen3-Coder-30B-A3B-Instruct", "qwen3_moe", "Qwen3MoeForCausalLM", 48),
                drafter(tmp / "epoch_0", nested([1, 23, 44], num_hidden_layers=2), extra=extra))


def _graph_default_ids(tmp: Path) -> Pair:
    """sglang#22836 (and #9076): custom ids on Llama-3.1-8B; the CUDA graphs are captured with the defaults."""
    return Pair(target(tmp / "Llama-3.1-8B-Instruct", "llama", "LlamaForCausalLM", 32),
                specforge_drafter(tmp / "llama-eagle3-custom", layer_ids=[4, 16, 28]))


def _tokenizer(tmp: Path) -> Pair:
    """EAGLE#258: a drafter trained for another tokenizer beside a Vicuna-style target (scaled vocabularies)."""
    target_dir = target(tmp / "vicuna-7b-v1.3", "llama", "LlamaForCausalLM", 32)
    for name, text in tokenizer_files(VOCAB, {"</s>": 2}, "</s>").items():
        (target_dir / name).write_text(text)
    other = tokenizer_files(VOCAB + 256, {"<|eot_id|>": VOCAB + 9}, "<|eot_id|>")
    return Pair(target_dir, drafter(tmp / "EAGLE-draft", top_level([2, 16, 29]), files=other))


def _four_ids(tmp: Path) -> Pair:
    """vllm#54526 / #54598: a speculators-trained head with 4 aux layers (fc 4096x16384; scaled 64x256), top-level ids."""
    return Pair(target(tmp / "Llama-3.1-8B-Instruct", "llama", "LlamaForCausalLM", 32),
                drafter(tmp / "speculators-eagle3-4aux", top_level([2, 10, 20, 29]), aux=4), convention="capture-before")


def _sglang_mla(tmp: Path) -> Pair:
    """sglang#25673: lightseekorg/kimi-k2.6-eagle3-mla, an MLA EAGLE-3 head, on an SGLang without the MLA drafter."""
    mla = {"layers.0.self_attn.q_a_proj.weight": (32, 2 * HIDDEN), "layers.0.self_attn.q_a_layernorm.weight": (32,),
           "layers.0.self_attn.q_b_proj.weight": (HEADS * HEAD_DIM, 32),
           "layers.0.self_attn.kv_a_proj_with_mqa.weight": (32 + 16, 2 * HIDDEN),
           "layers.0.self_attn.kv_a_layernorm.weight": (32,), "layers.0.self_attn.kv_b_proj.weight": (HEADS * 48, 32)}
    config = _config("Eagle3DeepseekV2ForCausalLM", model_type="kimi_k2", eagle_aux_hidden_state_layer_ids=[2, 30, 58],
                     kv_lora_rank=32, q_lora_rank=32, qk_rope_head_dim=16, qk_nope_head_dim=16, v_head_dim=32)
    return Pair(kimi_k25_target(tmp / "Kimi-K2.6"), drafter(tmp / "kimi-k2.6-eagle3-mla", config, extra=mla),
                convention="capture-before")


def _deepseek_sglang(tmp: Path) -> Pair:
    """sglang#6268: DeepSeek-V3 (deepseek_v3, 61 layers) with an EAGLE-3 head, before SGLang had its capture hook."""
    return Pair(target(tmp / "DeepSeek-V3", "deepseek_v3", "DeepseekV3ForCausalLM", 61),
                specforge_drafter(tmp / "deepseek-v3-eagle3"))


MODES: tuple[Mode, ...] = (
    Mode("whitelist-qwen3", "the config-time whitelist refuses a new target model_type (qwen3)",
         "https://github.com/vllm-project/vllm/issues/22152", ("vllm",), "target-whitelist", _qwen3_8b,
         "model_type 'qwen3' is not on", {"vllm": "0.10.0"}, {"vllm": "0.10.1"}),
    Mode("whitelist-kimi", "the whitelist refuses Kimi-K2 (kimi_k2) though Kimi EAGLE-3 heads exist",
         "https://github.com/vllm-project/vllm/issues/31254", ("vllm",), "target-whitelist", _kimi_k2_specforge,
         "model_type 'kimi_k2' is not on", {"vllm": "0.16.0"}, {"vllm": "0.18.0"}),
    Mode("interface-qwen3-moe", "the target class lacks the EAGLE-3 interface: \"Model does not support EAGLE3 interface\"",
         "https://github.com/vllm-project/vllm/issues/25134", ("vllm",), "target-interface", _qwen3_moe,
         "implements SupportsEagle3 in this release", {"vllm": "0.11.0"}, {"vllm": "0.12.0"}),
    Mode("interface-deepseek", "DeepSeek-V3 / Kimi-K2 classes lack the EAGLE-3 interface (passes validation, fails at load)",
         "https://github.com/vllm-project/vllm/pull/32079", ("vllm",), "target-interface", _kimi_k2_specforge,
         "DeepseekV3ForCausalLM implements SupportsEagle3", {"vllm": "0.17.1"}, {"vllm": "0.18.0"}),
    Mode("interface-kimi-k25", "the Kimi-K2.5 wrapper neither implements nor forwards the EAGLE-3 interface",
         "https://github.com/vllm-project/vllm/issues/36777", ("vllm",), "target-interface", _kimi_k25,
         "KimiK25ForConditionalGeneration implements SupportsEagle3", {"vllm": "0.16.0"}, {"vllm": "0.18.0"},
         requires=("target-architecture",)),
    Mode("sglang-deepseek-capture", "DeepSeek-V3 has no set_eagle3_layers_to_capture: EAGLE3 dies with AttributeError",
         "https://github.com/sgl-project/sglang/issues/6268", ("sglang",), "target-interface", _deepseek_sglang,
         "has no set_eagle3_layers_to_capture", {"sglang": "0.5.3"}, {"sglang": "0.5.5"}),
    Mode("sglang-kimi-k25-capture", "the Kimi-K2.5 wrapper has no set_eagle3_layers_to_capture",
         "https://github.com/sgl-project/sglang/pull/19689", ("sglang",), "target-interface", _kimi_k25,
         "has no set_eagle3_layers_to_capture", {"sglang": "0.5.9"}, {"sglang": "0.5.10"},
         requires=("target-architecture",)),
    Mode("d2t-missing", "a compressed draft vocab without d2t/t2d in the checkpoint: draft ids taken for target ids",
         "https://github.com/NVIDIA-NeMo/Automodel/pull/2447", ("vllm", "sglang"), "vocab-maps", _d2t_missing,
         "has neither d2t nor t2d", {"vllm": "0.32.0", "sglang": "0.5.23"}),
    Mode("d2t-arange", "d2t written as ids (arange) instead of offsets: draft i maps to target 2i, past the vocabulary",
         "https://github.com/verl-project/verl-SpeCo/pull/67", ("vllm", "sglang"), "vocab-maps", _d2t_arange,
         "d2t", {"vllm": "0.32.0", "sglang": "0.5.23"}),
    Mode("d2t-zeros", "an all-zero d2t with a smaller draft vocab (an untrained placeholder map)",
         "https://github.com/SafeAILab/EAGLE/issues/222", ("vllm", "sglang"), "vocab-maps", _d2t_zeros,
         "all zero", {"vllm": "0.32.0", "sglang": "0.5.23"}),
    Mode("no-layer-ids", "a drafter that declares no layer ids gets the engine's default, trained on them or not",
         "https://github.com/vllm-project/vllm/pull/50170", ("vllm", "sglang"), "layer-ids", _no_ids,
         "it declares no layer ids", {"vllm": "0.32.0", "sglang": "0.5.23"}, requires=("target-interface",),
         holds=lambda r: r["verdict"] == FAIL and bool(r.get("needs_input"))),
    Mode("final-layer-deepseek", "aux id n (the last layer's output) is never captured by DeepSeek/Kimi targets",
         "https://github.com/vllm-project/vllm/pull/46788", ("vllm",), "final-layer", _final_layer_kimi,
         "the last layer's output, but DeepseekV3ForCausalLM captures only each layer's input",
         {"vllm": "0.20.0"}, {"vllm": "0.25.0"}),
    Mode("ids-shifted-beyond", "SGLang's +1 moves gpt-oss ids [24, 30, 36] to [25, 31, 37]: 37 is never captured, fc gets 2 of 3",
         "https://github.com/sgl-project/sglang/issues/32226", ("sglang",), "aux-inputs", _gpt_oss_v3,
         "beyond the target's 36 layers", {"sglang": "0.5.16"}, {"sglang": "0.5.17"}),
    Mode("norm-before-fc-sglang", "norm_before_fc (and input_norm.weight) of an EAGLE-3.1 head ignored: wrong numerics, no error",
         "https://github.com/sgl-project/sglang/pull/32334", ("sglang",), "drafter-config", _gpt_oss_v3,
         "does not read eagle_config.norm_before_fc", {"sglang": "0.5.16"}),
    Mode("norm-before-fc-nested", "norm_before_fc nested in eagle_config is not read (only the top-level key)",
         "https://github.com/vllm-project/vllm/pull/42143", ("vllm",), "drafter-config", _nvidia_norm_before_fc,
         "does not read eagle_config.norm_before_fc", {"vllm": "0.20.0"}),
    Mode("fc-four-aux", "a head with 4 aux layers (fc 4x hidden) on a release that builds fc for 3: the load fails on the shape",
         "https://github.com/vllm-project/vllm/issues/54526", ("vllm",), "aux-inputs", _four_ids,
         "loading fails on the shape", {"vllm": "0.20.0"}),
    Mode("sglang-offset-rule", "SGLang's +1 on DeepSeek/Kimi ids written input-to-layer (first id 2): one layer high",
         "https://github.com/sgl-project/sglang/pull/25454", ("sglang",), "layer-ids", _kimi_k25_input_to,
         "silent off-by-one", {"sglang": "0.5.10"}, {"sglang": "0.5.14"}, requires=("target-interface",)),
    Mode("nested-ids-ignored", "ids only in eagle_config are not read: the target's default layers are fed instead, silently",
         "https://github.com/ggml-org/llama.cpp/pull/27040", ("vllm",), "layer-ids", _nested_only,
         "(no key it reads is set: default)", {"vllm": "0.18.0"}, holds=_fed_default),
    Mode("convention-off-by-one", "a head trained on SGLang's +1 (output-of ids) read as capture-before: position-0 acceptance ~10%",
         "https://github.com/vllm-project/vllm/pull/43671", ("vllm",), "layer-ids", _minimax,
         "silent off-by-one", {"vllm": "0.24.0"}, requires=("target-interface",)),
    Mode("graph-default-ids", "CUDA graphs captured with the default layers, not the drafter's: graphs and eager passes disagree",
         "https://github.com/sgl-project/sglang/pull/22836", ("sglang",), "layer-ids", _graph_default_ids,
         "CUDA-graph replays use the default", {"sglang": "0.5.8"}, {"sglang": "0.5.11"},
         holds=lambda r: r["verdict"] == FAIL and "CUDA-graph replays use the default" in r["detail"]),
    Mode("method-eagle", "an EAGLE-3 head run as EAGLE(-1): drafts with the wrong head, no error",
         "https://github.com/vllm-project/vllm/issues/21737", ("vllm",), "method", _method_eagle,
         "drafts with the wrong head", {"vllm": "0.32.0"}),
    Mode("spec-key-removed", "a --speculative-config key the release removed (disable_by_batch_size) is rejected from 0.17",
         "https://github.com/vllm-project/vllm/pull/35060", ("vllm",), "launch-command", _disable_by_batch_size,
         "dropped 'disable_by_batch_size'", {"vllm": "0.17.0"}, {"vllm": "0.16.0"},
         holds=lambda r: r["verdict"] != PASS),
    Mode("one-layer-only", "a draft saved with 2 decoder layers: \"eagle3 only supports one layer\" at start-up",
         "https://github.com/sgl-project/SpecForge/issues/129", ("sglang",), "drafter-tensors", _two_layers,
         "refuses this drafter at start-up", {"sglang": "0.5.1"}),
    Mode("mla-drafter-sglang", "an MLA EAGLE-3 head (Eagle3DeepseekV2ForCausalLM) on an SGLang without that class",
         "https://github.com/sgl-project/sglang/issues/25673", ("sglang",), "drafter-architecture", _sglang_mla,
         "Eagle3DeepseekV2ForCausalLM is not a registered EAGLE-3 drafter", {"sglang": "0.5.11"}, {"sglang": "0.5.14"}),
    Mode("sglang-eagle-algorithm", "`--speculative-algorithm EAGLE` with an EAGLE-3 drafter: accept length exactly 1.00, no warning",
         "https://github.com/sgl-project/sglang/pull/21272", ("sglang",), "method", _sglang_eagle_algorithm,
         "EAGLE with an EAGLE-3 drafter runs at accept length 1.00", {"sglang": "0.5.8"},
         holds=lambda r: r["verdict"] == FAIL and "accept length 1.00" in r["detail"]),
    Mode("draft-attention-backend", "a Llama (MHA) drafter inherits the MLA target's trtllm_mla backend and fails at start-up",
         "https://github.com/sgl-project/sglang/issues/23490", ("sglang",), "draft-attention-backend",
         _draft_attention_backend, "gets the MLA-only backend 'trtllm_mla', inherited from the target", {"sglang": "0.5.8"}),
    Mode("spec-v2-topk", "`SGLANG_ENABLE_SPEC_V2` with `--speculative-eagle-topk` > 1: tensor dimension error",
         "https://github.com/sgl-project/sglang/issues/14077", ("sglang",), "speculative-tree", _spec_v2_topk,
         "Spec v2 currently only supports topk = 1", {"sglang": "0.5.8"}, {"sglang": "0.5.23"},
         holds=lambda r: r["verdict"] == FAIL and "Spec v2" in r["detail"]),
    Mode("tokenizer-mismatch", "a drafter trained for another tokenizer: garbled drafts, acceptance near zero",
         "https://github.com/SafeAILab/EAGLE/issues/258", ("vllm", "sglang"), "tokenizer", _tokenizer,
         "vocabulary size: drafter 1280 ids, target 1024", {"vllm": "0.32.0", "sglang": "0.5.23"}),
)

# Modes only a launch line shows (doctor --launch): none left outside MODES (each is a mode above, with its line).
LAUNCH_MODES: tuple[str, ...] = ()


def by_key(key: str) -> Mode:
    return next(m for m in MODES if m.key == key)


# -- running a mode on a release -----------------------------------------------------------------------------
def inputs(pair: Pair) -> tuple[Any, Any]:
    from compat.doctor import read_drafter, read_target

    tgt = read_target(pair.target)
    return tgt, read_drafter(pair.drafter, tgt, pair.convention, pair.layer_ids)


def check_on(mode: Mode, report: dict[str, Any], tgt: Any, drft: Any, options: Options) -> dict[str, Any] | None:
    """The mode's check on one release's report (its JSON), or None when a required check fails first."""
    ctx = Ctx(report, tgt, drft, options)
    if any(get_check(c)(ctx).verdict != PASS for c in mode.requires):
        return None
    return get_check(mode.check)(ctx).to_json()


def holds_on(mode: Mode, report: dict[str, Any], tgt: Any, drft: Any, options: Options) -> bool:
    result = check_on(mode, report, tgt, drft, options)
    return result is not None and mode.holds(result)


def ranges(versions: list[str], held: set[str]) -> str:
    """`0.10.1 - 0.17.1; >= 0.22.0` over the ordered `versions` (a run reaching the newest is open-ended)."""
    runs: list[list[str]] = []
    previous = False
    for version in versions:
        if version in held:
            if previous:
                runs[-1].append(version)
            else:
                runs.append([version])
        previous = version in held
    if not runs:
        return "none"
    parts = []
    for run in runs:
        if run[-1] == versions[-1]:
            parts.append("every release" if run[0] == versions[0] else f">= {run[0]}")
        else:
            parts.append(run[0] if len(run) == 1 else f"{run[0]} - {run[-1]}")
    return "; ".join(parts)
