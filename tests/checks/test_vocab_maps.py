"""vocab-maps: d2t present and shaped for the draft vocab, t2d for the target's; none needed at full vocab."""

import pytest

from check_inputs import drafter, specforge_config, target, tensors


def test_reduced_vocab_with_maps_passes(ctx, run):
    result = run("vocab-maps", ctx())
    assert result["verdict"] == "pass" and "d2t [256] maps the draft vocab" in result["detail"]


@pytest.mark.parametrize("names, phrase", [
    pytest.param(tensors(d2t=False), "there is no d2t", id="no-d2t"),
    pytest.param({**tensors(), "d2t": ("I64", (255,))}, "d2t has shape [255]", id="d2t-short"),
    pytest.param({**tensors(), "t2d": ("BOOL", (1000,))}, "t2d has shape [1000]", id="t2d-short"),
    pytest.param({**tensors(), "lm_head.weight": ("F32", (128, 64))}, "lm_head.weight has 128 rows", id="lm-head"),
])
def test_broken_maps_fail(ctx, run, names, phrase):
    result = run("vocab-maps", ctx(draft=drafter(names=names)))
    assert result["verdict"] == "fail" and phrase in result["detail"]


def test_another_vocabulary_fails(ctx, run):
    result = run("vocab-maps", ctx(tgt=target(vocab=2048)))
    assert result["verdict"] == "fail" and "!= target vocab_size 2048" in result["detail"]


@pytest.mark.parametrize("version, verdict", [("0.29.0", "pass"), ("0.30.0", "fail")])
def test_d2t_at_full_vocab_is_refused_by_vllm_from_0_30(ctx, run, version, verdict):
    d = drafter(specforge_config(draft_vocab_size=1024), tensors(draft_vocab=1024))
    assert run("vocab-maps", ctx("vllm", version, draft=d))["verdict"] == verdict
