"""What verify makes of the engine's numbers: equality, acceptance, throughput, the verdict (no engine)."""

from __future__ import annotations

import pytest

from compat.verify.verify import acceptance, compare_outputs, failures, summarize, throughput


def test_equal_outputs_have_no_mismatches():
    assert compare_outputs([[1, 2], [3]], [[1, 2], [3]]) == (True, [])


def test_the_first_difference_is_located_per_prompt():
    equal, mismatches = compare_outputs([[1, 2, 3], [4, 5]], [[1, 9, 3], [4, 5]])
    assert not equal
    assert mismatches == [{"prompt": 0, "first_difference_at": 1, "plain": [2, 3], "speculative": [9, 3]}]


def test_a_shorter_output_differs_where_it_ends():
    equal, mismatches = compare_outputs([[1, 2, 3]], [[1, 2]])
    assert not equal and mismatches[0]["first_difference_at"] == 2


def test_acceptance_follows_vllms_definitions():
    a = acceptance({"num_drafts": 10, "num_draft_tokens": 30, "num_accepted_tokens": 12, "accepted_per_pos": [8, 3, 1]})
    assert a["rate"] == 0.4
    assert a["per_position"] == [0.8, 0.3, 0.1]
    assert a["mean_accepted_length"] == 2.2  # 1 + 12 / 10: the target's own token counts
    assert a["accepted_per_position"] == [8, 3, 1]


@pytest.mark.parametrize("counters", [None, {}, {"num_drafts": 0}])
def test_no_drafts_is_said_not_zero(counters):
    a = acceptance(counters)
    assert a["rate"] is None and a["per_position"] == [] and "no drafts" in a["note"]


def _result(tokens: int, seconds: float, spec=None) -> dict:
    return {"outputs": [[1] * tokens], "generated_tokens": tokens, "seconds": {"generate": seconds}, "spec": spec}


def test_throughput_and_speedup():
    t = throughput(_result(100, 2.0), _result(100, 1.0))
    assert (t["plain_tokens_per_s"], t["speculative_tokens_per_s"], t["speedup"]) == (50.0, 100.0, 2.0)


def test_throughput_without_timing_has_no_speedup():
    t = throughput({"generated_tokens": 5, "seconds": {}}, _result(5, 1.0))
    assert t["plain_tokens_per_s"] is None and t["speedup"] is None


def _document(equal: bool, rate: float | None) -> dict:
    spec = {"num_drafts": 10, "num_draft_tokens": 10, "num_accepted_tokens": int(10 * rate), "accepted_per_pos": [int(10 * rate)]} \
        if rate is not None else None
    plain = _result(4, 1.0)
    speculative = _result(4, 1.0, spec)
    if not equal:
        speculative["outputs"] = [[1, 1, 2, 1]]
    return summarize(plain, speculative)


def test_verdict_unequal_outputs_fail():
    assert any("greedy outputs differ" in f for f in failures(_document(False, 0.9), None))


def test_verdict_min_acceptance_is_a_floor():
    assert failures(_document(True, 0.5), 0.5) == []
    assert failures(_document(True, 0.4), 0.5) == ["acceptance 0.400 is below --min-acceptance 0.5"]
    assert failures(_document(True, None), 0.1) == ["acceptance no drafts is below --min-acceptance 0.1"]
    assert failures(_document(True, 0.0), None) == []
