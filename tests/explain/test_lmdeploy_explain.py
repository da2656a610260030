"""compat explain on LMDeploy (pinned releases, read from their released source: network): its log prefix and the raise
sites and logger calls of its speculative path (probes/lmdeploy/error_sites.py).

The texts are upstream's, each from its thread:
- InternLM/lmdeploy#3280: a log line as LMDeploy writes it (`%(asctime)s - %(name)s - %(levelname)s -
  %(filename)s:%(lineno)d - %(message)s`, lmdeploy/utils.py `_FORMAT`), of 0.7.x's async_engine.py;
- InternLM/lmdeploy#4846 (the PR that added Kimi-K2.6's EAGLE-3 to the PyTorch engine, 0.17.0): the refusal its
  config builder raises for a target of fewer than five layers, as the review thread quotes it;
- InternLM/lmdeploy#3945 (speculative decoding, 0.11.0) serves the draft with `--backend pytorch`; without it the
  server logs TurboMind's warning and drops the drafter: that line is modelled, its message from 0.18.0's
  serve/core/async_engine.py and its prefix the format #3280 shows.
LMDeploy needs CUDA: nothing runs.
"""

from __future__ import annotations

import pytest

from compat.explain import explain
from compat.explain.text import from_text


@pytest.fixture(scope="module")
def lmdeploy(pinned_release):
    return lambda version: pinned_release("lmdeploy", version)


def findings(tree, text: str) -> list[dict]:
    return explain(from_text(text), tree).findings


def test_the_log_prefix_is_read_and_the_line_found_by_its_message(lmdeploy):
    line = '2025-03-19 04:28:52,017 - lmdeploy - ERROR - async_engine.py:777 - session 85 finished, reason "error"'
    (finding,) = findings(lmdeploy("0.18.0"), line)  # InternLM/lmdeploy#3280
    assert finding["site"].startswith("lmdeploy/serve/core/async_engine.py:")
    assert finding["message"] == 'session 85 finished, reason "error"'  # the prefix (time, logger, level, file:line) is gone
    assert finding["process"] == "lmdeploy"  # the logger's name, what the prefix says wrote it
    assert finding["cause_id"] is None  # not about speculative decoding: no cause is made up


def test_kimi_k2s_builder_refuses_a_short_target(lmdeploy):
    text = "ValueError: Kimi-K2 EAGLE3 target model must contain at least five layers."  # InternLM/lmdeploy#4846
    (finding,) = findings(lmdeploy("0.18.0"), text)
    assert finding["kind"] == "error" and finding["site"].startswith("lmdeploy/pytorch/configurations/kimi_k2.py:")
    assert "cfg.num_layers < 5" in finding["cause"]  # the guard it raises under, read from the release
    assert not any(f.get("site") for f in findings(lmdeploy("0.16.0"), text))  # before Kimi's EAGLE-3: no such site


def test_turbomind_drops_the_drafter_and_the_flag_that_keeps_it(lmdeploy):
    line = ("2025-11-20 10:00:00,000 - lmdeploy - WARNING - async_engine.py:149 - "
            "speculative decoding is not supported by turbomind ")
    (finding,) = findings(lmdeploy("0.18.0"), line)
    assert finding["site"] == "lmdeploy/serve/core/async_engine.py:149" and finding["located_by"] == "log prefix"
    assert finding["cause_id"] == "backend-drops-drafter" and not finding.get("harmless")
    assert finding["fix"]["text"].startswith("--backend pytorch")


def test_every_release_with_speculative_decoding_has_its_sites(lmdeploy, pinned_release):
    import pinned
    from compat.report import build_report

    for version in pinned.versions("lmdeploy"):
        fact = build_report(lmdeploy(version))["error_sites"]
        if version == "0.10.0":
            assert fact["present"] is False
            continue
        templates = {s["template"] for s in fact["sites"]}
        assert fact["unparsed"] == [] and "eagle3 only supports 1 decode layer" in templates, version
        assert any(t.startswith("Can not found rewrite for architectures") for t in templates), version
