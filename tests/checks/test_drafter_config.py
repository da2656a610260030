"""drafter-config: network flags the drafter sets must be read; keys read without a default must be set."""

import pytest

from check_inputs import drafter, specforge_config


def test_a_plain_drafter_passes(ctx, run):
    assert run("drafter-config", ctx())["verdict"] == "pass"


@pytest.mark.parametrize("flag", ["fc_norm", "norm_output"])
def test_eagle_3_1_flags_are_ignored_before_0_22(ctx, run, flag):
    d = drafter(specforge_config(**{flag: True}))
    old = run("drafter-config", ctx("vllm", "0.18.0", draft=d))
    assert old["verdict"] == "fail" and f"{flag} = True" in old["detail"] and "wrong numerics" in old["detail"]
    assert run("drafter-config", ctx("vllm", "0.22.0", draft=d))["verdict"] == "pass"


def test_sglang_0_5_8_needs_draft_vocab_size(ctx, run):
    d = drafter(specforge_config(draft_vocab_size=None))
    result = run("drafter-config", ctx("sglang", "0.5.8", draft=d))
    assert result["verdict"] == "fail" and "draft_vocab_size" in result["missing"][0]


def test_target_hidden_size_equal_to_hidden_changes_nothing(ctx, run):
    d = drafter(specforge_config(target_hidden_size=64))
    assert run("drafter-config", ctx("sglang", "0.5.8", draft=d))["verdict"] == "pass"
