"""speculation_profile.json (compat/verify/sweep/profile.py): ModelOpt's schema 1.0 fields from a server's counters,
compat's beside them, and the reader --compare and doctor --profile use (a bad profile refused, naming the key).
Compatibility with ModelOpt is modelled here (its producer is in no wheel, and no release reads the profile: docs/
verify-sweep.md says why); tests/peers asks the pinned nvidia-modelopt for a reader, tools/modelopt_profile.py runs
the producer itself for a maintainer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from compat.core.errors import RefusedError, UsageError
from compat.verify.sweep.compare import compare
from compat.verify.sweep.profile import (build_profile, checkpoint_id, conditional, histogram, profile_from, read_profile,
                                         validation)


def sweep_doc(per_position=(0.7, 0.5, 0.3), drafts=1000, speedups=(1.8, 1.2, 0.8)) -> dict:
    accepted = [round(p * drafts) for p in per_position]
    acc = {"rate": sum(accepted) / (3 * drafts), "per_position": list(per_position), "drafts": drafts,
           "mean_accepted_length": 1 + sum(accepted) / drafts, "draft_tokens": 3 * drafts, "accepted_tokens": sum(accepted)}
    levels = [{"concurrency": c, "tokens_per_s": 100.0 * s, "speedup": s, "step_cost": 1.5, "cut_short": False,
               "latency": {"ttft": {"p50": 0.1, "p95": 0.2}, "itl": {"p50": 0.01, "p95": 0.02}},
               "baseline": {"tokens_per_s": 100.0, "latency": {"ttft": {"p50": 0.1, "p95": 0.2}, "itl": None}},
               "acceptance": {**acc, "drafts": drafts // 3}, "requests": {"sent": 8}}
              for c, s in zip((1, 4, 16), speedups)]
    return {"server": {"url": "http://gpu1:8000", "engine": "vllm", "version": "0.32.0", "model": "/lustre/org/Llama-8B",
                       "method": "eagle3", "draft_model": "/lustre/org/eagle3-8b", "num_speculative_tokens": 3,
                       "names_from": {"release": "0.32.0"}},
            "baseline": {"url": "http://gpu2:8000"}, "acceptance": {**acc, "verdict": "healthy"},
            "prompts": {"source": "built-in", "temperature": 0.0, "max_tokens": 64, "endpoint": "/v1/chat/completions",
                        "requests_per_level": {"1": 8, "4": 8, "16": 32}},
            "concurrency": [1, 4, 16], "levels": levels, "verdict": {"pays": "up-to", "crossover": 9.5},
            "launch": "vllm serve /lustre/org/Llama-8B --speculative-config '{}'", "complete": True, "stopped": None}


def test_modelopt_fields_from_the_counters():
    p = build_profile(sweep_doc(), doctor={"ran": True, "verdict": "works"})
    assert p["schema_version"] == "1.0" and p["measured"] is True and p["num_speculative_tokens"] == 3
    assert p["marginal_accept_rates"] == [0.7, 0.5, 0.3]
    assert p["conditional_accept_rates"] == pytest.approx([0.7, 0.5 / 0.7, 0.6], abs=1e-6)
    assert p["acceptance_length_histogram"] == {"1": 300, "2": 200, "3": 200, "4": 300}
    assert p["mean_accept_length"] == pytest.approx(2.5) and p["accept_length_by_k"] == {"3": 2.5}
    assert p["validation"]["mean_consistency"]["passed"] and p["validation"]["marginal_monotonicity"]["passed"]
    assert (p["draft_checkpoint"], p["target_model"]) == ("org/eagle3-8b", "org/Llama-8B")  # no cluster layout
    assert p["accept_length_model"] == "chain_analytic" and p["mean_accept_length_per_request"] is None
    c = p["compat"]
    assert (c["engine"], c["release"], c["doctor"]["verdict"]) == ("vllm", "0.32.0", "works")
    assert [lv["concurrency"] for lv in c["sweep"]["levels"]] == [1, 4, 16]
    assert c["sweep"]["levels"][0]["accepted_per_position"] == [233, 166, 100]  # 333 drafts at this level


def test_the_fields_follow_modelopts_producer_modelled():
    """Modelled on ModelOpt's producer, Model-Optimizer edf879d3 examples/specdec_bench/specdec_bench/
    speculation_profile.py: its input is keyed by acceptance length (a step's emitted tokens, the bonus token counted),
    so draft position i is length i + 2 (`_dense_from_length_keyed`); the canonical mean is per decode step, from the
    histogram (`per_step_mean_accept_length`); the mean check is 1 + sum(marginals) within 0.02 (`_consistency_check`);
    only chain methods extrapolate over K (`_CHAIN_DRAFTING_METHODS`); values are rounded to 6 places."""
    ours = build_profile(sweep_doc(per_position=(0.9, 0.61, 0.3)))
    hist = {int(length): steps for length, steps in ours["acceptance_length_histogram"].items()}
    assert hist == {1: 100, 2: 290, 3: 310, 4: 300}  # 1000 drafts: 900, 610, 300 accepted at positions 0, 1, 2
    steps = sum(hist.values())
    joint = {length: sum(v for at, v in hist.items() if at >= length) / steps for length in range(1, 6)}
    marginal = [round(joint[i + 2], 6) for i in range(3)]
    assert ours["marginal_accept_rates"] == marginal == [0.9, 0.61, 0.3]
    assert ours["mean_accept_length"] == round(sum(at * v for at, v in hist.items()) / steps, 6) == 2.81
    assert ours["validation"]["mean_consistency"] == {"implied_mean_accept_length": round(1 + sum(marginal), 6),
                                                      "reported_mean_accept_length": 2.81, "abs_delta": 0.0,
                                                      "tolerance": 0.02, "passed": True}
    assert ours["accept_length_by_k"] == {"3": 2.81} and ours["max_supported_k"] == 3
    assert (ours["verification_method"], ours["block_size"]) == ("longest_prefix", None)
    for method, model in (("eagle3", "chain_analytic"), ("draft_model", "chain_analytic"), ("dflash", "measured_per_k")):
        doc = sweep_doc()
        doc["server"]["method"] = method
        assert build_profile(doc)["accept_length_model"] == model, method


def test_the_maintainers_producer_check_names_what_differs():
    """tools/modelopt_profile.py (ModelOpt's producer on compat's profile) compares field by field."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from modelopt_profile import differences

    ours = build_profile(sweep_doc())
    assert differences(json.loads(json.dumps(ours)), ours) == []
    theirs = {**json.loads(json.dumps(ours)), "marginal_accept_rates": [0.7, 0.5, 0.31],
              "acceptance_length_histogram": {"1": 300}, "validation": {"mean_consistency": {"passed": False}}}
    assert differences(theirs, ours) == [
        "marginal_accept_rates: ModelOpt [0.7, 0.5, 0.31], compat [0.7, 0.5, 0.3]",
        "validation: ModelOpt {'mean_consistency': {'passed': False}}, compat " + repr(ours["validation"]),
        "acceptance_length_histogram: ModelOpt {1: 300}, compat {1: 300, 2: 200, 3: 200, 4: 300}",
        "validation.mean_consistency: ModelOpt's own check does not pass on compat's measurement",
        "validation.marginal_monotonicity: ModelOpt's own check does not pass on compat's measurement"]


def test_the_histogram_is_the_per_position_counts_differenced():
    assert histogram(10, [6, 3, 0]) == {"1": 4, "2": 3, "3": 3}
    assert histogram(10, [10, 10, 10]) == {"4": 10}
    assert conditional([0.5, 0.25, 0.0]) == [0.5, 0.5, 0.0] and conditional([0.0, 0.0]) == [0.0, 0.0]
    assert not validation(2.9, [0.7, 0.5, 0.3])["mean_consistency"]["passed"]  # a truncated vector is caught
    assert not validation(1.5, [0.2, 0.3])["marginal_monotonicity"]["passed"]
    assert checkpoint_id("/hf-local/Qwen/Qwen3-8B") == "Qwen/Qwen3-8B" and checkpoint_id(None) is None


def test_a_written_profile_reads_back_with_its_sweep(tmp_path):
    path = tmp_path / "speculation_profile.json"
    path.write_text(json.dumps(build_profile(sweep_doc())))
    p = read_profile(str(tmp_path))  # a directory holding the file
    assert p.producer == "compat" and p.levels == (1, 4, 16) and p.requests_per_level == {1: 8, 4: 8, 16: 32}
    assert p.marginal == [0.7, 0.5, 0.3] and p.drafts == 1000 and (p.engine, p.release) == ("vllm", "0.32.0")
    assert p.max_tokens == 64 and p.temperature == 0.0 and p.by_level[16]["speedup"] == 0.8


@pytest.mark.parametrize("change, words", [
    ({"schema_version": None}, "no schema_version"),
    ({"schema_version": "2.0"}, "compat reads schema 1.x"),
    ({"measured": False}, "unmeasured stub"),
    ({"marginal_accept_rates": [0.5, 0.6, 0.1]}, "rises at position 1"),
    ({"marginal_accept_rates": [0.5, 0.4]}, "has 2 entries, num_speculative_tokens is 3"),
    ({"marginal_accept_rates": [0.5, "x", 0.1]}, "not a list of rates"),
    ({"mean_accept_length": 0.5}, "not a number of at least 1"),
])
def test_a_bad_profile_is_refused_naming_the_key(change, words):
    data = build_profile(sweep_doc()) | change
    with pytest.raises(RefusedError, match=words):
        profile_from(data, "p.json")


def test_files_that_are_not_profiles(tmp_path):
    with pytest.raises(UsageError, match="no such profile"):
        read_profile(str(tmp_path / "missing.json"))
    (tmp_path / "half.json").write_text('{"schema_version": "1.0", "marginal_accept_rates": [0.8,')
    with pytest.raises(RefusedError, match="not JSON"):
        read_profile(str(tmp_path / "half.json"))


def test_a_profile_modelopt_wrote_compares_by_its_vectors():
    modelopt = {k: v for k, v in build_profile(sweep_doc()).items() if k != "compat"}
    p = profile_from(modelopt, "theirs.json")
    assert p.producer == "modelopt" and p.levels == () and p.by_level == {}
    now = sweep_doc(per_position=(0.7, 0.1, 0.05))
    c = compare(p, now)
    assert [r["status"] for r in c["positions"]] == ["same", "regressed", "regressed"]
    assert c["levels"] == [] and "does not record its engine release" in c["release"]["words"]


def test_compare_finds_the_position_that_broke_and_the_levels_that_stopped_paying():
    then = profile_from(build_profile(sweep_doc()), "then.json")
    now = sweep_doc(per_position=(0.7, 0.1, 0.05), speedups=(1.3, 0.9, 0.7))
    now["server"]["version"] = "0.33.0"
    c = compare(then, now)
    assert c["regressions"] == 4  # positions 1 and 2; concurrency 1 (1.8x -> 1.3x) and 4 (paid, now costs)
    assert "from position 1 on (0.500 -> 0.100" in c["summary"] and "measured on vllm 0.32.0, now on vllm 0.33.0" in c["summary"]
    assert [r["status"] for r in c["levels"]] == ["regressed", "regressed", "same"]
    same = compare(then, sweep_doc(per_position=(0.69, 0.49, 0.31)))
    assert same["regressions"] == 0 and same["summary"].startswith("no regression")
