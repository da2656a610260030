"""target-interface: a registered class that can feed aux hidden states (SupportsEagle3 / set_eagle3_layers_to_capture)."""

import pytest

from check_inputs import target


def test_vllm_class_with_the_interface_passes(ctx, run):
    result = run("target-interface", ctx())
    assert result["verdict"] == "pass" and "SupportsEagle3" in result["detail"]
    assert result["location"] == "vllm/model_executor/models/deepseek_v2.py:1200"


@pytest.mark.parametrize("whitelisted, phrase", [
    pytest.param(False, "The whitelist refuses it first", id="refused-first"),
    pytest.param(True, "passes config validation, then fails at model load", id="load-time-trap"),
])
def test_vllm_class_without_the_interface_fails_at_model_load(ctx, run, whitelisted, phrase):
    wl = {"present": True, "model_types": ["kimi"] if whitelisted else ["llama"], "methods_gated": ["eagle3"],
          "load_time_checks": [{"location": "vllm/v1/worker/gpu_model_runner.py:3000"}]}
    targets = [{"class": "DeepseekV3ForCausalLM", "architectures": ["DeepseekV3ForCausalLM"], "interface": None}]
    result = run("target-interface", ctx(report_changes={"eagle3_targets": targets, "eagle3_whitelist": wl}))
    assert result["verdict"] == "fail" and phrase in result["detail"]
    assert result["location"] == "vllm/v1/worker/gpu_model_runner.py:3000"


def test_an_unregistered_architecture_fails(ctx, run):
    result = run("target-interface", ctx(tgt=target(architecture="KimiK25ForConditionalGeneration")))
    assert result["verdict"] == "fail" and "KimiK25ForConditionalGeneration" in result["detail"]


def test_no_architectures_fails(ctx, run):
    tgt = target()
    tgt.architecture = None
    assert run("target-interface", ctx(tgt=tgt))["detail"] == "the target config.json has no architectures"


def test_sglang_needs_set_eagle3_layers_to_capture(ctx, run):
    assert run("target-interface", ctx("sglang"))["verdict"] == "pass"
    result = run("target-interface", ctx("sglang", report_changes={"eagle3_targets": []}))
    assert result["verdict"] == "fail" and "AttributeError" in result["detail"]


# LMDeploy (modelled: its eagle3_targets fact as probes/lmdeploy/eagle3_targets.py reads 0.18.0; it needs CUDA, so
# nothing runs): the config builder sets the layers for eagle3, the class captures them; a class that captures nothing
# hands the drafter its last hidden state with no error (lmdeploy/pytorch/models/llama_eagle3.py skips its fc)
LMDEPLOY_TARGETS = [{"class": "KimiK25ForConditionalGeneration", "role": "target",
                     "architectures": ["KimiK25ForConditionalGeneration"], "accepts_layer_ids": False,
                     "location": "lmdeploy/pytorch/models/kimi_k25.py:149",
                     "capture_location": "lmdeploy/pytorch/models/kimi_k2_language.py:786"}]


def lmdeploy_ctx(tgt):
    from check_inputs import drafter, report

    from compat.checks import Ctx, Options

    facts = {**report("sglang"), "engine": "lmdeploy", "version": "0.18.0", "eagle3_targets": LMDEPLOY_TARGETS}
    return Ctx(facts, tgt, drafter(tgt=tgt), Options())


def test_lmdeploy_class_that_captures_passes(run):
    result = run("target-interface", lmdeploy_ctx(target(architecture="KimiK25ForConditionalGeneration")))
    assert result["verdict"] == "pass" and "captures the layers its config builder sets" in result["detail"]
    assert result["location"] == "lmdeploy/pytorch/models/kimi_k2_language.py:786"


def test_lmdeploy_class_that_captures_nothing_fails_silently_upstream(run):
    # Kimi-K2 text (DeepseekV3ForCausalLM): its builder sets the layers, its class (deepseek_v2.py) reads none
    result = run("target-interface", lmdeploy_ctx(target(architecture="DeepseekV3ForCausalLM")))
    assert result["verdict"] == "fail" and "with no error" in result["detail"] and "AttributeError" not in result["detail"]
