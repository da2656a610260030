"""drafter-architecture: the name the release looks up (vLLM renames it) must be a registered drafter."""

import pytest

from check_inputs import drafter, specforge_config


@pytest.mark.parametrize("arch, registered, verdict, phrase", [
    pytest.param("LlamaForCausalLMEagle3", ["LlamaForCausalLMEagle3"], "pass", "is registered", id="as-is"),
    pytest.param("LlamaForCausalLM", ["Eagle3LlamaForCausalLM"], "pass", "renames LlamaForCausalLM to Eagle3LlamaForCausalLM",
                 id="renamed"),
    pytest.param("LlamaForCausalLMEagle3", ["Eagle3LlamaForCausalLM"], "fail", "does not register", id="0.10.0-not-registered"),
])
def test_vllm_names(ctx, run, arch, registered, verdict, phrase):
    d = drafter(specforge_config(architectures=[arch]))
    result = run("drafter-architecture", ctx(report_changes={"eagle3_drafters": registered}, draft=d))
    assert result["verdict"] == verdict and phrase in result["detail"]


def test_vllm_mtp_model_type_is_rewritten(ctx, run):
    d = drafter(specforge_config(model_type="deepseek_v3"))
    result = run("drafter-architecture", ctx(draft=d))
    assert result["verdict"] == "fail" and "deepseek_mtp" in result["detail"]


@pytest.mark.parametrize("arch, verdict, phrase", [
    pytest.param("LlamaForCausalLMEagle3", "pass", "is registered", id="registered"),
    pytest.param("DeepseekV3ForCausalLM", "fail", "NextN", id="nextn-rewrite"),
    pytest.param("Eagle3LlamaForCausalLM", "fail", "is not a registered EAGLE-3 drafter", id="vllm-name"),
])
def test_sglang_names(ctx, run, arch, verdict, phrase):
    result = run("drafter-architecture", ctx("sglang", draft=drafter(specforge_config(architectures=[arch]))))
    assert result["verdict"] == verdict and phrase in result["detail"]


def test_no_architectures(ctx, run):
    d = drafter(specforge_config(architectures=None))
    assert run("drafter-architecture", ctx(draft=d))["detail"] == "the drafter config.json has no architectures"
