"""Counters no vLLM server can show over a run are not turned into an acceptance rate (found by tests/hostile: a
/metrics answer accepting 1000x more than it drafted read as a `healthy` 500.0 rate, a counter going backwards as a
negative one)."""

from __future__ import annotations

import pytest

from compat.verify.server.counters import counter_contradictions


def counts(drafts: int, draft_tokens: int, accepted: int) -> dict[str, int]:
    return {"drafts": drafts, "draft tokens": draft_tokens, "accepted tokens": accepted}


def test_a_healthy_run_contradicts_nothing():
    assert counter_contradictions(counts(10, 30, 15), [7, 5, 3]) == []
    assert counter_contradictions(counts(0, 0, 0), []) == []


@pytest.mark.parametrize("given, per_pos, says", [
    (counts(4, 12, 6000), [2000, 2000, 2000], "6000 tokens accepted of 12 drafted"),
    (counts(4, 12, 6), [5, 1, 0], "position 0 accepted 5 times in 4 drafts"),
    (counts(10, 30, -760870), [3, 1, 0], "accepted tokens went down by 760870"),
    (counts(-3, 30, 5), [3, 1, 1], "drafts went down by 3"),
    (counts(10, 30, 5), [3, -2, 1], "accepted at position 1 went down by 2"),
])
def test_impossible_counters_are_named(given, per_pos, says):
    assert says in counter_contradictions(given, per_pos)
