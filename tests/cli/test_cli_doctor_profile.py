"""`compat doctor --profile PROFILE`: the measured numbers of a speculation_profile.json next to doctor's prediction,
and whether they agree; a bad profile fails before any work (exit 4, naming the key)."""

from __future__ import annotations

import json

import pytest

from cli_helpers import compat, engine_tree


def profile(tmp_path, marginal, release="0.20.0", name="p.json"):
    data = {"schema_version": "1.0", "measured": True, "method": "eagle3", "num_speculative_tokens": len(marginal),
            "marginal_accept_rates": marginal, "mean_accept_length": 1 + sum(marginal),
            "acceptance_length_histogram": {"1": 10, "2": 10},
            "compat": {"schema": "compat.speculation-profile/1", "engine": "vllm", "release": release,
                       "doctor": {"ran": True, "verdict": "works as is"},
                       "sweep": {"concurrency": [1, 8], "requests_per_level": {"1": 8, "8": 16}, "max_tokens": 64,
                                 "temperature": 0, "levels": [{"concurrency": 1, "speedup": 1.7},
                                                              {"concurrency": 8, "speedup": 0.8}],
                                 "verdict": {"pays": "up-to", "summary": "speculation pays up to concurrency 1",
                                             "crossover": 3.2}}}}
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


@pytest.fixture
def work(tmp_path):
    engine_tree(tmp_path / "vllm-tree", "vllm", "0.20.0")
    return tmp_path


def test_the_measured_numbers_stand_next_to_the_prediction(work, pair, env):
    target, drafter = pair
    run = compat("doctor", target, drafter, "--path", "vllm-tree", "--offline", "--profile",
                 profile(work, [0.72, 0.5, 0.3]), "--json", env=env, cwd=work)
    d = run.json()
    b = d["profile"]
    assert b["per_position"] == [0.72, 0.5, 0.3] and b["speedup_by_level"] == {"1": 1.7, "8": 0.8}
    assert b["predicted"] == d["verdict"] and b["acceptance_verdict"] == "healthy" and b["crossover"] == 3.2
    assert b["doctor_at_measure_time"] == "works as is"
    human = compat("doctor", target, drafter, "--path", "vllm-tree", "--offline", "--profile",
                   profile(work, [0.72, 0.5, 0.3]), env=env, cwd=work)
    assert "per position 72% / 50% / 30%" in human.out and "speed-up 1.70x at 1, 0.80x at 8" in human.out
    assert f"predicted: {d['verdict']}; " in human.out


def test_a_collapsed_measurement_against_a_works_prediction_is_a_disagreement(work, pair, env):
    target, drafter = pair
    d = compat("doctor", target, drafter, "--path", "vllm-tree", "--offline", "--profile",
               profile(work, [0.01, 0.0, 0.0], release="0.19.0"), "--json", env=env, cwd=work).json()
    b = d["profile"]
    if d["verdict"].startswith("works"):
        assert b["agree"] is False and b["agreement"].startswith("disagree: doctor finds nothing")
    else:
        assert b["agree"] is True
    assert any("measured on vllm 0.19.0" in n for n in b["notes"])


def test_a_bad_profile_fails_before_any_work(work, pair, env):
    target, drafter = pair
    (work / "stub.json").write_text(json.dumps({"schema_version": "1.0", "measured": False}))
    run = compat("doctor", target, drafter, "--path", "vllm-tree", "--offline", "--profile", str(work / "stub.json"),
                 env=env, cwd=work)
    assert run.code == 4 and "unmeasured stub" in run.err and "Traceback" not in run.err
