"""vocab-maps: d2t/t2d by content, with the rules convert refuses by (compat/vocab_maps.py)."""

import pytest

from check_inputs import MapBytes, drafter, specforge_config, target, tensors, vocab_maps


def test_a_consistent_pair_passes(ctx, run):
    result = run("vocab-maps", ctx())
    assert result["verdict"] == "pass" and "strictly increasing" in result["detail"] and "t2d agrees" in result["detail"]


def zeros(n: int) -> MapBytes:
    return MapBytes("I64", (n,), bytes(8 * n))


@pytest.mark.parametrize("maps, phrase", [
    pytest.param({"d2t": zeros(256), "t2d": MapBytes("BOOL", (1024,), bytes(1024))}, "", id="all-zero-d2t-all-false-t2d"),
    pytest.param({"d2t": zeros(256)}, "", id="all-zero-d2t"),
    pytest.param({**vocab_maps(), "t2d": vocab_maps(used=list(range(1, 1024, 4)))["t2d"]}, "disagree", id="pair-disagrees"),
    pytest.param({"d2t": vocab_maps(used=list(range(768, 1024)))["d2t"], "t2d": MapBytes("BOOL", (1024,), bytes(1023) + b"\x01")},
                 "", id="t2d-counts-one"),
])
def test_maps_convert_would_refuse_fail(ctx, run, maps, phrase):
    names = {k: v for k, v in tensors().items() if k not in ("d2t", "t2d") or k in maps}
    result = run("vocab-maps", ctx(draft=drafter(names=names, maps=maps)))
    assert result["verdict"] == "fail" and phrase in result["detail"], result["detail"]


def test_no_map_with_a_reduced_vocab_fails(ctx, run):
    result = run("vocab-maps", ctx(draft=drafter(names=tensors(d2t=False, t2d=False), maps={})))
    assert result["verdict"] == "fail" and "neither d2t nor t2d" in result["detail"]


def test_lm_head_rows_must_be_the_draft_vocab(ctx, run):
    names = {**tensors(), "lm_head.weight": ("F32", (128, 64))}
    assert "lm_head.weight has 128 rows" in run("vocab-maps", ctx(draft=drafter(names=names)))["detail"]


def test_another_vocabulary_fails(ctx, run):
    result = run("vocab-maps", ctx(tgt=target(vocab=2048)))
    assert result["verdict"] == "fail" and "!= target vocab_size 2048" in result["detail"]


@pytest.mark.parametrize("version, verdict", [("0.29.0", "pass"), ("0.30.0", "fail")])
def test_d2t_at_full_vocab_is_refused_where_the_loader_says_so(ctx, run, version, verdict):
    d = drafter(specforge_config(draft_vocab_size=1024), tensors(draft_vocab=1024), maps=vocab_maps(1024, 1024))
    assert run("vocab-maps", ctx("vllm", version, draft=d))["verdict"] == verdict
