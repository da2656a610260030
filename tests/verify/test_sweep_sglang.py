"""The concurrency sweep on the SGLang path. SGLang cannot run on this machine, so both servers are modelled
(tests/verify/modelled_engine.py) on what compat's probes read from the real SGLang 0.5.23 source (fetched into the
cache): the metric names (`sglang:spec_verify_calls_total`, `sglang:generation_tokens_total`), the server info path
and its speculative server arguments, and the logger call of its decode line (`accept len: {}, accept rate: {}, `,
sglang/srt/managers/scheduler_components/metrics_reporter.py).

Modelled, not measured: SGLang's text, timing and counter arithmetic (verify calls = completion tokens / the mean
accepted length the test sets), and the decode lines it logs (one per request here, with that mean) around the
template read from the release.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compat.report import build_report
from modelled_engine import Behaviour, ModelledEngine

pytestmark = pytest.mark.network
ROOT = Path(__file__).resolve().parents[2]
RELEASE = "0.5.23"


@pytest.fixture(scope="module")
def report(pinned_release) -> dict:
    return build_report(pinned_release("sglang", RELEASE))


def sweep(*args: str) -> tuple[int, dict, str]:
    proc = subprocess.run([sys.executable, "-m", "compat", "verify", *args, "--offline", "--json"], capture_output=True,
                          text=True, cwd=ROOT, timeout=240)
    assert proc.stdout.strip(), proc.stderr[-2000:]
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_the_counters_give_each_levels_accepted_length_and_the_profile_says_what_sglang_lacks(report, tmp_path):
    spec = ModelledEngine(report, Behaviour(mean_accepted_length=2.5, delay=0.002))
    plain = ModelledEngine(report, Behaviour(speculating=False, delay=0.004))
    with spec.serve() as s, plain.serve() as b:
        code, d, err = sweep("--server", s.url, "--baseline", b.url, "--concurrency", "1,2", "--num-prompts", "4",
                             "--max-tokens", "20", "--save-profile", str(tmp_path / "p.json"))
    assert code in (0, 1), err[-2000:]
    assert d["server"]["engine"] == "sglang" and d["server"]["method"] == "EAGLE3" and d["baseline"]["speculating"] is False
    for lv in d["levels"]:
        assert lv["acceptance"]["mean_accepted_length"] == pytest.approx(2.5, abs=0.1)
        assert lv["acceptance"]["per_position"] == [] and "spec_verify_calls_total" in lv["acceptance"]["source"]
        assert lv["speedup"] > 0
    assert d["pair"]["tokenizer_compared"] is False and "does not answer POST /tokenize" in d["pair"]["tokenizer"]
    profile = json.loads((tmp_path / "p.json").read_text())
    assert profile["marginal_accept_rates"] is None and profile["mean_accept_length"] == pytest.approx(2.5, abs=0.1)
    assert any("SGLang has none" in n for n in profile["compat"]["notes"])


def test_without_metrics_the_servers_accept_len_lines_give_the_acceptance(report, tmp_path):
    site = next(s for s in report["error_sites"]["sites"] if s["template"].startswith("accept len: "))
    log = tmp_path / "server.log"
    log.write_text("[2026-12-05 09:00:00] server started\n" + _decode_line(site["template"], 4.0))  # before the sweep

    def write(count: int) -> None:
        with open(log, "a") as out:
            out.write(_decode_line(site["template"], 1.75 if count <= 6 else 2.25))  # warm-ups: 1, 1 at level 1

    spec = ModelledEngine(report, Behaviour(metrics=False, mean_accepted_length=2.0, delay=0.002, on_chat=write))
    plain = ModelledEngine(report, Behaviour(speculating=False, metrics=False, delay=0.004))
    with spec.serve() as s, plain.serve() as b:
        code, d, err = sweep("--server", s.url, "--baseline", b.url, "--concurrency", "1,2", "--num-prompts", "4",
                             "--max-tokens", "20", "--server-log", str(log))
    assert code in (0, 1), err[-2000:]
    first, second = d["levels"]
    assert first["acceptance"]["mean_accepted_length"] == pytest.approx(1.75)  # only what was written during the level
    assert second["acceptance"]["mean_accepted_length"] == pytest.approx(2.25)
    assert "accept len" in first["acceptance"]["source"] and site["location"] in first["acceptance"]["source"]
    assert first["acceptance"]["scope"] == "the server's log lines written during this level"
    assert d["acceptance"]["mean_accepted_length"] == pytest.approx(2.0)


def _decode_line(template: str, length: float) -> str:
    filled = template.replace("{}", f"{length:.2f}", 1).replace("{}", f"{(length - 1) / 3:.2f}", 1)
    return f"[2026-12-05 10:00:00 TP0] Decode batch, #running-req: 1, #token: 64, token usage: 0.00, {filled}" \
           "gen throughput (token/s): 80.00, #queue-req: 0\n"
