"""`compat verify --server URL --baseline URL2 --concurrency ...` against modelled servers that speak the names
compat's probes read from the real vLLM 0.32.0 source: the paths the two real `vllm serve` processes of tests/engine
cannot reach cheaply. The CLI runs as a user runs it (a child process); the servers run in this process.

Modelled (not the engine's code): the batch model (each streamed event is one engine step, as long as
`pace(requests in flight)`; a speculative step emits its accepted tokens together, so its tokens per event is the
mean accepted length), the counters' arithmetic per request, /tokenize's ids, a server that goes away.
Read from the release: every path and metric name.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from compat.report import build_report
from modelled_engine import Behaviour, ModelledEngine

pytestmark = pytest.mark.network
ROOT = Path(__file__).resolve().parents[2]
STEP_S = 0.008


def spec_pace(n: int) -> float:   # verifying K+1 tokens per request fills the batch: grows fast with load
    return STEP_S * (1 + 0.6 * (n - 1))


def plain_pace(n: int) -> float:  # a plain decode step has room in the batch
    return STEP_S * (1 + 0.05 * (n - 1))


@pytest.fixture(scope="module")
def report(pinned_release) -> dict:
    return build_report(pinned_release("vllm", "0.32.0"))


def speculative(report, **changes) -> ModelledEngine:
    b = Behaviour(per_position=(1.0, 1.0, 0.0), pace=spec_pace, tokens_per_event=3, tokenize_shift=0,
                  root="/models/llama-8b")
    for key, value in changes.items():
        setattr(b, key, value)
    return ModelledEngine(report, b)


def plain(report, **changes) -> ModelledEngine:
    b = Behaviour(speculating=False, pace=plain_pace, tokenize_shift=0, root="/models/llama-8b")
    for key, value in changes.items():
        setattr(b, key, value)
    return ModelledEngine(report, b)


def sweep(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compat", "verify", *args, "--offline"], capture_output=True,
                          text=True, cwd=ROOT, timeout=timeout)


def test_a_crossover_is_found_and_written_as_profile_page_and_markdown(report, tmp_path):
    with speculative(report).serve() as s, plain(report).serve() as b:
        proc = sweep("--server", s.url, "--baseline", b.url, "--concurrency", "1,2,4,8", "--num-prompts", "8",
                     "--max-tokens", "24", "--json", "--save-profile", str(tmp_path), "--page", str(tmp_path / "p.html"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    d = json.loads(proc.stdout)
    assert d["schema"] == "compat.verify-sweep/1" and d["complete"] and [lv["concurrency"] for lv in d["levels"]] == [1, 2, 4, 8]
    speedups = [lv["speedup"] for lv in d["levels"]]
    assert speedups[0] > 1.5 and speedups[-1] < 1.0, speedups
    v = d["verdict"]
    assert v["pays"] == "up-to" and 2 <= v["crossover"] <= 8 and v["costs_at"] == [8]
    assert "batch-effects" in [r["kind"] for r in v["reasons"]], v["reasons"]
    assert all(lv["acceptance"]["mean_accepted_length"] == pytest.approx(3.0, abs=0.05) for lv in d["levels"])
    assert all(lv["outputs_equal"]["equal"] for lv in d["levels"]) and d["pair"]["tokenizer_compared"]
    assert d["pair"]["model"].startswith("/models/llama-8b on both")
    profile = json.loads((tmp_path / "speculation_profile.json").read_text())
    assert profile["marginal_accept_rates"] == [1.0, 1.0, 0.0] and profile["compat"]["sweep"]["verdict"]["pays"] == "up-to"
    assert profile["compat"]["doctor"]["ran"] is False and "not readable here" in profile["compat"]["doctor"]["why"]
    html = (tmp_path / "p.html").read_text()
    assert "crossover ≈" in html and not any(word in html for word in ("<script", "src=", "href=", "<link", "@import"))


def test_markdown_and_text_print_the_same_levels(report):
    with speculative(report).serve() as s, plain(report).serve() as b:
        md = sweep("--server", s.url, "--baseline", b.url, "--concurrency", "1,4", "--num-prompts", "4",
                   "--max-tokens", "12", "--format", "md")
    assert md.returncode == 0, md.stderr[-2000:]
    assert "| concurrency | tokens/s |" in md.stdout and "\n| 1 | " in md.stdout and "\n| 4 | " in md.stdout
    assert "**Verdict**" in md.stdout and "sweep: [" not in md.stderr  # no progress lines around a report


def test_without_a_baseline_it_says_what_cannot_be_known(report):
    with speculative(report).serve() as s:
        proc = sweep("--server", s.url, "--concurrency", "1,2", "--num-prompts", "4", "--max-tokens", "12")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "cannot be known without --baseline" in proc.stdout and "speed-up" in proc.stdout
    assert "sweep: [" in proc.stderr  # a log gets progress lines (stderr is not a terminal here)


@pytest.mark.parametrize("changes, words", [
    ({"root": "/models/qwen3-8b"}, "the servers serve different models: http://127.0.0.1:"),
    ({"tokenize_shift": 7}, "the servers tokenize differently"),
    ({"speculating": True}, "speculates (GET /metrics: the spec-decode counters are registered)"),
])
def test_a_baseline_that_is_not_one_is_refused_before_any_request(report, changes, words):
    base = plain(report, **changes)
    with speculative(report).serve() as s, base.serve() as b:
        proc = sweep("--server", s.url, "--baseline", b.url, "--concurrency", "1,2", "--num-prompts", "4")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert words in proc.stderr and "fix:" in proc.stderr and "Traceback" not in proc.stderr
    assert base.chats == 0


def test_an_unreachable_baseline_is_exit_3(report):
    with speculative(report).serve() as s:
        proc = sweep("--server", s.url, "--baseline", "http://127.0.0.1:9", "--concurrency", "1,2", "--json")
    assert proc.returncode == 3 and "cannot reach http://127.0.0.1:9" in json.loads(proc.stdout)["error"]


def test_a_server_that_dies_mid_sweep_keeps_the_levels_before_and_names_the_point(report, tmp_path):
    holder: dict = {}

    def die_at(count: int) -> None:
        if count == 13:  # the first measured request of concurrency 2 (warm-ups: 1, 1 at level 1, 2 at level 2)
            threading.Thread(target=lambda: (holder["server"].httpd.shutdown(), holder["server"].httpd.server_close()),
                             daemon=True).start()

    with speculative(report, on_chat=die_at).serve() as s, plain(report).serve() as b:
        holder["server"] = s
        proc = sweep("--server", s.url, "--baseline", b.url, "--concurrency", "1,2,4", "--num-prompts", "8",
                     "--max-tokens", "12", "--json", "--save-profile", str(tmp_path / "partial.json"))
    assert proc.returncode == 3, proc.stderr[-2000:]
    d = json.loads(proc.stdout)
    assert [lv["concurrency"] for lv in d["levels"]] == [1] and not d["complete"]
    assert d["stopped"]["concurrency"] == 2 and d["stopped"]["reason"] == "server-died" and d["stopped"]["url"] == s.url
    profile = json.loads((tmp_path / "partial.json").read_text())
    assert profile["compat"]["sweep"]["complete"] is False and profile["compat"]["sweep"]["stopped"]["concurrency"] == 2


def test_sigterm_stops_the_sweep_and_what_was_measured_is_printed_and_written(report, tmp_path):
    started = threading.Event()

    def note(count: int) -> None:
        if count == 9:  # concurrency 2 under way (warm-ups: 1, 1 at level 1, 2 at level 2)
            started.set()

    with speculative(report, on_chat=note).serve() as s, plain(report).serve() as b:
        proc = subprocess.Popen([sys.executable, "-m", "compat", "verify", "--server", s.url, "--baseline", b.url,
                                 "--concurrency", "1,2,4", "--num-prompts", "4", "--max-tokens", "200", "--json",
                                 "--offline", "--save-profile", str(tmp_path / "p.json"), "--page", str(tmp_path / "p.html")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            assert started.wait(120), "concurrency 2 never started"
            os.kill(proc.pid, signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err[-2000:]
    d = json.loads(out)
    assert [lv["concurrency"] for lv in d["levels"]] == [1] and d["stopped"]["reason"] == "interrupted"
    assert d["stopped"]["error"] == "SIGTERM" and d["stopped"]["concurrency"] == 2
    assert json.loads((tmp_path / "p.json").read_text())["compat"]["sweep"]["stopped"]["reason"] == "interrupted"
    assert (tmp_path / "p.html").is_file()


def test_compare_finds_a_planted_regression_at_one_position(report, tmp_path):
    with speculative(report).serve() as s, plain(report).serve() as b:
        first = sweep("--server", s.url, "--baseline", b.url, "--concurrency", "1,2", "--num-prompts", "4",
                      "--max-tokens", "12", "--save-profile", str(tmp_path / "then.json"))
    assert first.returncode == 0, first.stderr[-2000:]
    broken = speculative(report, per_position=(1.0, 0.0, 0.0), tokens_per_event=2)  # position 1 broken
    with broken.serve() as s, plain(report).serve() as b:
        again = sweep("--server", s.url, "--baseline", b.url, "--compare", str(tmp_path / "then.json"), "--json")
    assert again.returncode == 1, again.stderr[-2000:]
    d = json.loads(again.stdout)
    assert [lv["concurrency"] for lv in d["levels"]] == [1, 2]  # the profile's levels, as it was measured
    assert d["levels"][0]["requests"]["asked"] == 4 and d["prompts"]["max_tokens"] == 12
    c = d["compare"]
    assert [r["status"] for r in c["positions"]] == ["same", "regressed", "same"]
    assert "acceptance regressed from position 1 on (1.000 -> 0.000" in c["summary"]
    assert "the same release (vllm 0.32.0)" in c["summary"] and any(f["check"] == "compare" for f in d["failures"])
