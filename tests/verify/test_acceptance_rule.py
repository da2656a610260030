"""compat/acceptance.py: the verdict rule and the per-position diagnosis, on numbers shaped like the published
references and like the failures they are meant to name."""

from __future__ import annotations

import pytest

from compat.acceptance import (COLLAPSED, DEGRADED, HEALTHY, NO_SPECULATION, REFERENCES, RULE, UNKNOWN, AcceptanceSample,
                               conditional_rates, healthy_mean_length, judge, unknown, useful_positions)


def counts(drafts: int, per_pos: list[float], k: int = 3) -> AcceptanceSample:
    """An AcceptanceSample from per-position rates, through vLLM's counters (as verify --server builds it)."""
    accepted_per_pos = [round(r * drafts) for r in per_pos]
    return AcceptanceSample.from_counts("test", drafts, drafts * k, sum(accepted_per_pos), accepted_per_pos)


def test_from_counts_uses_vllms_definitions():
    s = AcceptanceSample.from_counts("t", drafts=100, draft_tokens=300, accepted_tokens=160, accepted_per_position=[70, 55, 35])
    assert s.rate == pytest.approx(160 / 300)
    assert s.mean_accepted_length == pytest.approx(2.6)
    assert s.per_position == pytest.approx((0.70, 0.55, 0.35))
    assert s.num_speculative_tokens == 3


@pytest.mark.parametrize("reference", [r for r in REFERENCES if r.per_position and r.mean_accepted_length and r.mean_accepted_length > 2])
def test_vllms_own_healthy_baselines_are_healthy_and_decay_normally(reference):
    j = judge(counts(10_000, list(reference.per_position)))
    assert j.verdict == HEALTHY, (reference.pair, j.why)
    assert j.diagnosis.pattern == "normal-decay"
    assert j.diagnosis.next_step is None


def test_the_weak_vl_moe_baseline_is_degraded_with_a_partly_right_drafter():
    weak = next(r for r in REFERENCES if r.mean_accepted_length == 1.35)
    j = judge(counts(10_000, list(weak.per_position)), next_step="compat doctor --launch X")
    assert j.verdict == DEGRADED and j.diagnosis.pattern == "low-first-position"
    assert j.diagnosis.next_step == "compat doctor --launch X"


def test_d2t_zeroed_is_collapsed_uniformly_and_points_at_the_vocabulary_map():
    """The collapsed test server's pattern: nothing is ever accepted, at any position."""
    j = judge(counts(2000, [0.0, 0.0, 0.0]))
    assert j.verdict == COLLAPSED
    assert j.diagnosis.pattern == "uniform-near-zero"
    assert "d2t" in j.diagnosis.suspects[0]


def test_wrong_layers_collapse_position_zero_but_later_positions_recover():
    """Drafts that get past a wrong first step are accepted on: the inputs of step one, not the ids, are wrong."""
    j = judge(counts(5000, [0.06, 0.04, 0.025]))
    assert j.verdict == COLLAPSED and j.diagnosis.pattern == "first-position-near-zero"
    assert "layers" in j.diagnosis.suspects[0]
    assert j.diagnosis.conditional[0] == pytest.approx(0.04 / 0.06, rel=0.01)


def test_uniform_near_zero_read_from_conditional_rates_when_enough_got_past_position_zero():
    j = judge(counts(5000, [0.05, 0.002, 0.0]))
    assert j.verdict == COLLAPSED and j.diagnosis.pattern == "uniform-near-zero"


def test_too_few_drafts_to_tell_lists_every_suspect():
    j = judge(counts(40, [0.05, 0.0, 0.0]))
    assert j.diagnosis.pattern == "first-position-near-zero" and len(j.diagnosis.suspects) == 3
    assert "too few" in j.diagnosis.summary


def test_steep_decay_names_the_drafters_depth_and_the_useful_number_of_tokens():
    j = judge(counts(1000, [1.0, 0.0, 0.0]))  # the tiny oracle drafter on the healthy server
    assert j.verdict == HEALTHY and j.diagnosis.pattern == "steep-decay"
    assert j.diagnosis.useful_positions == 1 and "num_speculative_tokens 1" in j.diagnosis.summary


def test_no_drafts_or_no_counters_is_no_speculation_never_a_number():
    assert judge(AcceptanceSample("t", speculating=False)).verdict == NO_SPECULATION
    j = judge(AcceptanceSample.from_counts("t", 0, 0, 0, [0, 0, 0]))
    assert j.verdict == NO_SPECULATION and "no drafts" in j.why
    assert unknown("metrics off").verdict == UNKNOWN


@pytest.mark.parametrize("mal, k, verdict", [
    (1.05, 3, COLLAPSED), (1.30, 3, DEGRADED), (1.51, 3, DEGRADED), (1.53, 3, HEALTHY), (2.17, 3, HEALTHY),
    (1.29, 1, DEGRADED), (1.31, 1, HEALTHY), (1.49, 2, DEGRADED), (1.50, 2, HEALTHY),
])
def test_without_per_position_counters_the_mean_length_is_judged_against_speculators_floors(mal, k, verdict):
    j = judge(AcceptanceSample("sglang", mean_accepted_length=mal, num_speculative_tokens=k))
    assert j.verdict == verdict, j.why
    assert "no per-position counters" in j.why


def test_sglang_eagle_with_an_eagle3_drafter_shape_is_collapsed_and_names_it():
    j = judge(AcceptanceSample("sglang", mean_accepted_length=1.0, num_speculative_tokens=3))
    assert j.verdict == COLLAPSED and any("sglang#21272" in s for s in j.diagnosis.suspects)


def test_the_rule_and_its_references_are_written_down():
    assert "speculators" in RULE and "0.3" in RULE and "0.1" in RULE
    sources = {r.source for r in REFERENCES}
    assert {"speculators nightly e2e floors", "vLLM EAGLE-3 acceptance-length regression test"} <= sources
    assert any("SpecForge" in s for s in sources)
    assert all(r.url.startswith("https://github.com/") for r in REFERENCES)
    doc = judge(counts(100, [0.7, 0.5, 0.3])).to_json()
    assert set(doc) == {"verdict", "why", "rule", "references", "diagnosis"}


def test_helpers():
    assert conditional_rates((0.8, 0.4, 0.0)) == pytest.approx((0.5, 0.0))
    assert conditional_rates((0.0, 0.0)) == (None,)
    assert useful_positions((0.7, 0.2, 0.05)) == 2 and useful_positions((0.01,)) == 1
    assert healthy_mean_length(3) == pytest.approx(1.52) and healthy_mean_length(None) == pytest.approx(1.52)
