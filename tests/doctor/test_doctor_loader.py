"""doctor's loader check and a method's optional packages on pinned real releases (network), end to end: tiny
checkpoints written here (compat's own safetensors writer: headers and a few bytes), the release's own source read
as doctor reads it (the class loaders on demand, kept in the facts cache).

- vllm#35548: a checkpoint shipped without its MTP layers served at acceptance 0; vLLM's DeepSeekMTP raises from 0.17.0
  (deepseek_mtp.py: "MTP speculative decoding layer {layer_idx} weights missing from checkpoint"); before it only
  the loader's check of unquantized models refused (default_loader.py); SGLang (modelled from its source: compat
  never runs it) loads the rest and says nothing (sglang#35797, Qwen3.5 MTP dropped silently);
- lmdeploy#1180 (FasterDecoding's Medusa keys `0.0.linear.weight`): refused by vLLM 0.24.0, mapped from 0.25.0, and
  doctor names 0.25.0 as the fix;
- suffix decoding without arctic-inference (vLLM 0.11.1 to 0.33.0: `_validate_suffix_decoding`): asked of the serving
  venv when doctor has it (--python), else unknown with the command that asks."""

import json
from pathlib import Path

import pytest

from doctor_helpers import check

pytestmark = pytest.mark.network

DEEPSEEK = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 4,
            "num_nextn_predict_layers": 1, "hidden_size": 64, "vocab_size": 256}
MEDUSA = {"architectures": ["MedusaModel"], "model_type": "medusa", "num_heads": 2, "num_hidden_layers": 1, "hidden_size": 64,
          "vocab_size": 256, "truncated_vocab_size": 256}
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 4, "hidden_size": 64, "vocab_size": 256}


def checkpoint(root: Path, config: dict, names: list[str], *, index: bool = False) -> Path:
    """config.json and the tensors' headers (two bytes each), in one file or behind an index of names."""
    from compat.safetensors_stream import OutputTensor, write_safetensors
    from compat.safetensors_stream.source import bytes_source

    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps(config))
    if index:  # a sharded target: only the index is read (its weight_map), never a shard
        (root / "model.safetensors.index.json").write_text(json.dumps({"weight_map": dict.fromkeys(names, "shard-1.safetensors")}))
        return root
    write_safetensors(root / "model.safetensors", [OutputTensor(n, bytes_source("F16", (1,), b"\0\0", n), "F16") for n in names], None)
    return root


def deepseek_target(root: Path, *, mtp: bool, quantized: bool = False) -> Path:
    names = ["model.embed_tokens.weight", "lm_head.weight", "model.norm.weight"] + [
        f"model.layers.{i}.self_attn.q_a_proj.weight" for i in range(4)]
    if mtp:
        names += [f"model.layers.4.{t}" for t in ("enorm.weight", "hnorm.weight", "eh_proj.weight", "shared_head.norm.weight",
                                                  "self_attn.q_a_proj.weight")]
    config = {**DEEPSEEK, **({"quantization_config": {"quant_method": "fp8"}} if quantized else {})}
    return checkpoint(root, config, names, index=True)


def run_mtp(engine: str, version: str, target: Path, method: str) -> dict:
    from compat.doctor import Options, diagnose, no_drafter, read_target
    from doctor_helpers import open_release

    t = read_target(target)
    return diagnose(open_release(engine, version), t, no_drafter(t), Options(method=method))


def test_mtp_layers_missing_from_a_quantized_checkpoint(tmp_path):
    target = deepseek_target(tmp_path / "glm", mtp=False, quantized=True)
    silent = check(run_mtp("vllm", "0.16.0", target, "mtp"), "method-tensors")
    assert silent["verdict"] == "warn" and "model.layers.{4}" in silent["detail"]
    refused = check(run_mtp("vllm", "0.17.1", target, "mtp"), "method-tensors")
    assert refused["verdict"] == "fail" and "weights missing from checkpoint" in refused["detail"]
    assert refused["location"].startswith("vllm/model_executor/models/deepseek_mtp.py:")
    sglang = check(run_mtp("sglang", "0.5.23", target, "NEXTN"), "method-tensors")
    assert sglang["verdict"] == "warn" and "with no error" in sglang["detail"]


def test_mtp_layers_present_pass_on_both_engines(tmp_path):
    target = deepseek_target(tmp_path / "dsv3", mtp=True)
    assert check(run_mtp("vllm", "0.17.1", target, "mtp"), "method-tensors")["verdict"] == "pass"
    assert check(run_mtp("sglang", "0.5.23", target, "NEXTN"), "method-tensors")["verdict"] == "pass"


def test_medusa_heads_named_the_fasterdecoding_way(diagnose, tmp_path):
    from compat.doctor import Options, diagnose as run, read_drafter, read_target
    from compat.doctor.releases import ReleaseFinder
    from doctor_helpers import open_release

    target = checkpoint(tmp_path / "vicuna", LLAMA, ["model.embed_tokens.weight"])
    names = [f"{h}.0.linear.{p}" for h in range(2) for p in ("weight", "bias")] + [f"{h}.1.weight" for h in range(2)]
    drafter = checkpoint(tmp_path / "medusa-vicuna", MEDUSA, names)
    t = read_target(target)
    finder = ReleaseFinder("vllm", open_release=lambda v: open_release("vllm", v), versions=["0.24.0", "0.25.0", "0.25.1"])
    old = check(run(open_release("vllm", "0.24.0"), t, read_drafter(drafter, t), Options(method="medusa"), releases=finder),
                "method-tensors")
    assert old["verdict"] == "fail" and "0.0.linear.weight" in old["detail"]
    assert old["fix"]["kind"] == "release" and old["fix"]["releases"] == ">=0.25.0"
    assert check(diagnose("vllm", "0.25.0", target, drafter, method="medusa"), "method-tensors")["verdict"] == "pass"


def test_suffix_without_a_serving_venv_depends_on_it(tmp_path):
    from compat.doctor import DEPENDS_VENV, Options, diagnose, no_drafter, read_target
    from compat.core.interpreter import Interpreter
    from doctor_helpers import open_release

    t = read_target(checkpoint(tmp_path / "llama", LLAMA, ["model.embed_tokens.weight"]))
    unknown = diagnose(open_release("vllm", "0.33.0"), t, no_drafter(t), Options(method="suffix"))
    venv = check(unknown, "method-venv")
    assert unknown["verdict"] == DEPENDS_VENV and venv["venv_question"]["command"].startswith("python -E -c ")
    asked = diagnose(open_release("vllm", "0.33.0"), t, no_drafter(t), Options(method="suffix", fixes_python=Interpreter.current()))
    assert check(asked, "method-venv")["verdict"] == "fail" and asked["verdict"] != DEPENDS_VENV


def test_a_verdict_that_waits_on_the_serving_venv_exits_1_as_the_help_says(tmp_path):
    """No check fails, yet it is no "works as is": exit 0 is only for that (doctor --help's exit codes)."""
    from doctor_helpers import open_release, run_doctor

    open_release("vllm", "0.33.0")  # into the cache the CLI reads --offline
    target = checkpoint(tmp_path / "llama", LLAMA, ["model.embed_tokens.weight"])
    code, out, err = run_doctor(str(target), "--engine", "vllm==0.33.0", "--method", "suffix", "--offline", "--json")
    assert json.loads(out)["verdict"].startswith("depends on the serving venv"), err
    assert code == 1
