"""method-block: DSpark's block layout (sglang#30982: gamma vs gamma + 1 slots), across the releases before and
after each engine reads the layout key (vLLM 0.25-0.26 `dspark_bonus_anchor`, 0.27 on `sample_from_anchor`, its
speculators translation; SGLang 0.5.16-0.5.18 nothing, 0.5.19 on `sample_from_anchor`)."""

from compat.block_drafters import rewrite
from method_inputs import DEEPSPEC_DSPARK, DFLASH_TENSORS, SPECFORGE_DSPARK, SPECULATORS_DSPARK, ctx


def test_specforge_dspark_is_read_anchor_first_by_vllm_0_34(run):
    """SpecForge trains the bonus-anchor block (dspark.py:334) and writes no sample_from_anchor: vLLM's default
    reads it anchor-first."""
    result = run("method-block", ctx("vllm", "0.34.0", SPECFORGE_DSPARK, DFLASH_TENSORS))
    assert result["verdict"] == "fail" and "silent collapse" in result["detail"]
    assert result["location"] == "vllm/v1/worker/gpu/spec_decode/dspark/config.py:132"
    assert result["trained_anchor_first"] is False and result["read_anchor_first"] is True
    context = ctx("vllm", "0.34.0", SPECFORGE_DSPARK, DFLASH_TENSORS)
    fixed = rewrite(context.report, SPECFORGE_DSPARK, context.drafter.recognised, context.target, "dspark")
    assert fixed.written == {"sample_from_anchor": False}  # what compat convert ckpt writes: nothing else changes
    assert run("method-block", ctx("vllm", "0.34.0", fixed.config, DFLASH_TENSORS))["verdict"] == "pass"


def test_vllm_0_25_reads_the_negated_bonus_key(run):
    result = run("method-block", ctx("vllm", "0.25.0", SPECFORGE_DSPARK, DFLASH_TENSORS))
    assert result["verdict"] == "fail" and "not dspark_bonus_anchor, default False" in result["detail"]


def test_speculators_dspark_is_translated_to_the_bonus_block(run):
    """A speculators config without the key: 0.25.0's translation sets dspark_bonus_anchor, 0.34.0's defaults
    sample_from_anchor to false (vllm#48639): both read the layout speculators trains."""
    config = {k: v for k, v in SPECULATORS_DSPARK.items() if k != "sample_from_anchor"}
    for version in ("0.25.0", "0.34.0"):
        assert run("method-block", ctx("vllm", version, config))["verdict"] == "pass", version


def test_sglang_reads_the_key_only_from_0_5_19(run):
    config = {**SPECULATORS_DSPARK, "sample_from_anchor": False}
    old = run("method-block", ctx("sglang", "0.5.18", config))
    assert old["verdict"] == "fail" and "it reads no layout key" in old["detail"]
    assert run("method-block", ctx("sglang", "0.5.23", config))["verdict"] == "pass"


def test_deepspec_trains_anchor_first(run):
    assert run("method-block", ctx("vllm", "0.34.0", DEEPSPEC_DSPARK, method="dspark"))["verdict"] == "pass"
    assert run("method-block", ctx("sglang", "0.5.16", DEEPSPEC_DSPARK, method="DSPARK"))["verdict"] == "pass"


def test_an_unknown_trainer_is_answered_both_ways(run):
    config = {"architectures": ["LingDSparkModel"], "block_size": 7, "markov_rank": 128}
    result = run("method-block", ctx("vllm", "0.34.0", config, method="dspark"))
    assert result["verdict"] == "warn"
    assert "if trained anchor-first (DeepSpec), it matches" in result["detail"]
    assert "with the bonus anchor (speculators, SpecForge), it is read one slot early" in result["detail"]
