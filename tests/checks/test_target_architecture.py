"""target-architecture: the release's registry must list the target's architecture before a patch can help."""

import pytest

from check_inputs import target

KNOWN = {"DeepseekV3ForCausalLM": "vllm/model_executor/models/registry.py:91"}


def test_a_registered_architecture_passes_with_its_registry_line(ctx, run):
    result = run("target-architecture", ctx(report_changes={"target_architectures": KNOWN}))
    assert result["verdict"] == "pass" and result["location"] == KNOWN["DeepseekV3ForCausalLM"]


@pytest.mark.parametrize("arrival, phrase, release", [
    pytest.param("0.15.0", "it arrives in 0.15.0", ">=0.15.0", id="later-release-has-it"),
    pytest.param("", "no later release known here has it either", None, id="no-release-has-it"),
    pytest.param(None, "its model registry does not list it (no compat", None, id="not-looked-up"),
])
def test_an_unknown_architecture_fails_and_names_the_release_that_has_it(ctx, run, arrival, phrase, release):
    context = ctx("vllm", "0.13.0", report_changes={"target_architectures": KNOWN},
                  tgt=target("kimi_k2", "KimiK25ForConditionalGeneration"))
    context.releases = (lambda fact, key: arrival) if arrival is not None else None
    result = run("target-architecture", context)
    assert result["verdict"] == "fail" and "KimiK25ForConditionalGeneration is not in vllm 0.13.0" in result["detail"]
    assert phrase in result["detail"] and result.get("release") == release


def test_it_blocks_patches_for_every_check():
    from compat.checks import get_check

    assert get_check("target-architecture").blocks == ("patch",)
