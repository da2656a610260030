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
