"""draft-tensor-parallel: vLLM's SpeculativeConfig rules on the draft TP (real vLLM 0.32.0 facts) evaluated on
the line; SGLang runs the draft at the target's TP."""

from __future__ import annotations

import json

import pytest

from compat.checks import Options
from compat.launch_line import read_line


@pytest.fixture(scope="module")
def facts(pinned_release):
    from compat.report import build_report

    report = build_report(pinned_release("vllm", "0.32.0"))
    return {k: report[k] for k in ("draft_parallel_rules", "cli_arguments", "speculative_config")}


def run_spec(ctx, run, facts, spec, tp="-tp 8"):
    text = f"vllm serve /m/t {tp} --speculative-config '{json.dumps({'method': 'eagle3', 'model': '/m/d', **spec})}'"
    return run("draft-tensor-parallel", ctx("vllm", "0.32.0", report_changes=facts, options=Options(launch=read_line(text))))


@pytest.mark.parametrize("spec, verdict", [({}, "pass"), ({"draft_tensor_parallel_size": 1}, "pass"),
                                           ({"draft_tensor_parallel_size": 8}, "pass"),
                                           ({"draft_tensor_parallel_size": 4}, "fail"),
                                           ({"tensor_parallel_size": 1}, "fail")])
def test_vllm_rules(ctx, run, facts, spec, verdict):
    result = run_spec(ctx, run, facts, spec)
    assert result["verdict"] == verdict, result["detail"]
    if spec == {"draft_tensor_parallel_size": 4}:
        assert "speculative_draft_tensor_parallel_size=4 cannot be other value than 1" in result["detail"]
        assert result["line_edits"][0]["value"] == 8
    if spec == {"tensor_parallel_size": 1}:
        assert "Please pass 'draft_tensor_parallel_size'" in result["detail"]
        assert {(e["key"], e["value"]) for e in result["line_edits"]} == {("tensor_parallel_size", None),
                                                                          ("draft_tensor_parallel_size", 1)}


def test_the_target_tp_default_is_the_releases(ctx, run, facts):
    assert run_spec(ctx, run, facts, {"draft_tensor_parallel_size": 2}, tp="")["verdict"] == "fail"  # default 1


def test_sglang_runs_the_draft_at_the_targets_tp(ctx, run):
    line = read_line("python -m sglang.launch_server --model-path /m/t --tp 8 --speculative-draft-model-path /m/d")
    assert run("draft-tensor-parallel", ctx("sglang", options=Options(launch=line)))["verdict"] == "pass"
