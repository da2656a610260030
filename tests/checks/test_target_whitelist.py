"""target-whitelist: vLLM's model_type list (substring match), and no list at all."""

import pytest

from check_inputs import target

WHITELIST = {"present": True, "variable": "eagle3_target_supported", "model_types": ["llama", "qwen", "minicpm", "gpt_oss"],
             "location": "vllm/config/speculative.py:541", "list_location": "vllm/config/speculative.py:540",
             "methods_gated": ["eagle3"], "raises": "ValueError"}


@pytest.mark.parametrize("model_type, verdict", [
    pytest.param("kimi_k2", "fail", id="kimi-refused"),
    pytest.param("qwen3_moe", "pass", id="substring-match"),
    pytest.param("llama", "pass", id="exact"),
])
def test_the_list_is_matched_by_substring(ctx, run, model_type, verdict):
    result = run("target-whitelist", ctx(report_changes={"eagle3_whitelist": WHITELIST}, tgt=target(model_type)))
    assert result["verdict"] == verdict
    assert result["location"] == "vllm/config/speculative.py:540"
    if verdict == "fail":
        assert "eagle3_target_supported" in result["detail"] and repr(model_type) in result["detail"]


def test_a_list_that_gates_other_methods_passes(ctx, run):
    wl = dict(WHITELIST, methods_gated=["eagle"])
    assert run("target-whitelist", ctx(report_changes={"eagle3_whitelist": wl}))["verdict"] == "pass"


def test_no_list_passes_with_the_probe_reason(ctx, run):
    result = run("target-whitelist", ctx())
    assert result["verdict"] == "pass" and result["detail"] == "no config-time model-type whitelist"


def test_sglang_has_no_list(ctx, run):
    assert run("target-whitelist", ctx("sglang"))["verdict"] == "pass"
