"""The sweep's static page (compat/verify/sweep/page.py) in a real headless Chromium (Debian's `chromium` over its
DevTools pipe, tests/matrix_page/cdp.py), offline: the three charts render with the crossover marked and the
references drawn, nothing is logged as an error, nothing but the file is requested, and at phone width the page does
not scroll sideways (the charts scale, the table scrolls in its box). The sweep document is a made-up one with the
shape document.py writes; the real sweeps' pages are written by tests/engine/test_verify_sweep.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from compat.verify.sweep.page import page

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "matrix_page"))
from cdp import Browser  # noqa: E402


def band(p50: float, p95: float) -> dict:
    return {"p50": p50, "p95": p95}


def level(c: int, speedup: float) -> dict:
    return {"concurrency": c, "tokens_per_s": 40.0 * c * speedup, "speedup": speedup, "step_cost": 1.2 + 0.3 * c,
            "cut_short": False, "latency": {"ttft": band(0.05 * c, 0.09 * c), "itl": band(0.01 * c, 0.02 * c)},
            "acceptance": {"mean_accepted_length": 2.4, "per_position": [0.7, 0.5, 0.2]},
            "baseline": {"tokens_per_s": 40.0 * c, "latency": {"ttft": band(0.04 * c, 0.07 * c), "itl": band(0.008 * c, 0.012 * c)}}}


DOC = {"server": {"url": "http://gpu1:8000", "engine": "vllm", "version": "0.32.0", "model": "<Llama & co>",
                  "method": "eagle3", "num_speculative_tokens": 3},
       "baseline": {"url": "http://gpu2:8000"}, "concurrency": [1, 2, 4, 8, 16],
       "levels": [level(1, 2.1), level(2, 1.6), level(4, 1.2), level(8, 0.84), level(16, 0.6)],
       "acceptance": {"per_position": [0.7, 0.5, 0.2], "verdict": "healthy", "why": "position-0 acceptance 0.700 >= 0.3"},
       "verdict": {"pays": "up-to", "crossover": 6.12, "summary": "speculation pays up to concurrency 4 and costs 40% above it",
                   "reasons": [{"kind": "batch-effects", "text": "batch effects: 1.50x at 1, 6.00x at 16"}]},
       "stopped": None}


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium: the `chromium` part's fixture (tests/parts.py finds it before this runs, or skips the test
    with the command that installs it; under CI=true, fails)."""
    with Browser() as b:
        yield b


@pytest.fixture
def written(tmp_path) -> Path:
    path = tmp_path / "sweep.html"
    path.write_text(page(DOC), encoding="utf-8")
    return path


def test_the_charts_render_offline_with_the_crossover_marked(browser, written):
    browser.open(written)
    assert browser.evaluate("document.querySelectorAll('svg').length") == 4
    assert browser.evaluate("document.querySelectorAll('line.crossover').length") == 1
    assert "6.12" in browser.evaluate("document.querySelector('svg').textContent")
    assert browser.evaluate("document.querySelectorAll('rect.measured').length") == 3
    assert browser.evaluate("document.querySelectorAll('line.reference').length") >= 9
    assert browser.evaluate("document.querySelectorAll('polygon.band').length") == 4  # TTFT and ITL, both servers
    assert browser.evaluate("document.querySelectorAll('tbody tr').length") == 5
    assert browser.evaluate("document.title") == "Does speculation pay? <Llama & co>"  # escaped, shown as text
    assert browser.evaluate("document.getElementById('verdict').textContent").startswith("Verdict: speculation pays up to")
    box = browser.evaluate("JSON.stringify(document.querySelector('svg').getBoundingClientRect())")
    assert '"width":0' not in box
    assert browser.errors() == []
    assert browser.requests() == [written.resolve().as_uri()]  # the page itself, nothing else


def test_readable_at_phone_width(browser, written):
    browser.open(written, width=375, height=812, mobile=True)
    assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")  # no sideways scroll
    assert browser.evaluate("[...document.querySelectorAll('svg')].every(s => s.getBoundingClientRect().width <= window.innerWidth)")
    assert browser.evaluate("document.querySelector('.wide').scrollWidth > document.querySelector('.wide').clientWidth")
    shot = browser.screenshot(written.with_suffix(".png"))
    assert shot.stat().st_size > 5_000


def test_a_stopped_sweep_and_one_without_a_baseline_still_render(browser, tmp_path):
    doc = {**DOC, "baseline": None, "levels": [dict(lv, speedup=None, baseline=None) for lv in DOC["levels"][:2]],
           "verdict": {"pays": "unknown", "crossover": None, "summary": "cannot be known without --baseline", "reasons": []},
           "stopped": {"concurrency": 4, "during": "speculative requests", "reason": "interrupted", "error": "SIGTERM"}}
    path = tmp_path / "partial.html"
    path.write_text(page(doc), encoding="utf-8")
    browser.open(path)
    text = browser.evaluate("document.body.textContent")
    assert "Stopped at concurrency 4" in text and "without --baseline" in text
    assert browser.evaluate("document.querySelectorAll('line.crossover').length") == 0 and browser.errors() == []
