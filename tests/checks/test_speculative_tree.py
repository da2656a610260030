"""speculative-tree: SGLang's draft-tree rules (the probe's conditions, evaluated on the line's settings), on
SGLang 0.5.8's real rules (spec v2 needs topk 1 there; SGLang cannot run here, its start-up code is what is
modelled) and on hand-written ones."""

from __future__ import annotations


import pytest

from compat.checks import Options
from compat.checks._rules import UNKNOWN, evaluate
from compat.launch_line import read_line

LINE = ("python -m sglang.launch_server --model-path /m/t --speculative-algorithm EAGLE3 "
        "--speculative-draft-model-path /m/d --speculative-num-steps 3")


@pytest.fixture(scope="module")
def real_facts(pinned_release):
    from compat.report import build_report

    report = build_report(pinned_release("sglang", "0.5.8"))
    return {k: report[k] for k in ("speculative_tree_rules", "cli_arguments", "cli_flags")}


def run_line(ctx, run, facts, text):
    return run("speculative-tree", ctx("sglang", "0.5.8", report_changes=facts, options=Options(launch=read_line(text))))


@pytest.mark.parametrize("env, topk, verdict", [("", 4, "pass"), ("SGLANG_ENABLE_SPEC_V2=1 ", 4, "fail"),
                                                ("SGLANG_ENABLE_SPEC_V2=1 ", 1, "pass")])
def test_spec_v2_needs_topk_1(ctx, run, real_facts, env, topk, verdict):
    draft = 4 if topk == 1 else 8
    result = run_line(ctx, run, real_facts, f"{env}{LINE} --speculative-eagle-topk {topk} --speculative-num-draft-tokens {draft}")
    assert result["verdict"] == verdict, result["detail"]
    if verdict == "fail":
        assert "Spec v2 currently only supports topk = 1" in result["detail"] and "server_args.py:2148" in result["detail"]
        assert {(e["option"], e["value"]) for e in result["line_edits"]} == {("--speculative-eagle-topk", 1),
                                                                              ("--speculative-num-draft-tokens", 4)}


def test_draft_tokens_other_than_steps_plus_1_with_topk_1_are_rewritten(ctx, run, real_facts):
    result = run_line(ctx, run, real_facts, f"{LINE} --speculative-eagle-topk 1 --speculative-num-draft-tokens 8")
    assert result["verdict"] == "warn" and "adjusted to speculative_num_steps + 1" in result["detail"]
    assert result["line_edits"][0]["value"] == 4


def test_topk_without_steps_is_refused(ctx, run, real_facts):
    line = LINE.replace(" --speculative-num-steps 3", "") + " --speculative-eagle-topk 2"
    result = run_line(ctx, run, real_facts, line)
    assert result["verdict"] == "fail" and "AssertionError" in result["detail"]


def test_a_rule_the_line_does_not_settle_is_listed_not_guessed(ctx, run, real_facts):
    result = run_line(ctx, run, real_facts, f"{LINE} --speculative-eagle-topk 4 --speculative-num-draft-tokens 8")
    assert result["verdict"] == "pass"
    assert any("page_size" in r for r in result["undecided"])  # the page size is not on the line


def test_the_evaluator_is_three_valued():
    settings = {"speculative_eagle_topk": 2, "page_size": None}
    assert evaluate("self.speculative_eagle_topk > 1 and self.page_size > 1", settings, {}) is UNKNOWN
    assert evaluate("self.speculative_eagle_topk == 1 and self.page_size > 1", settings, {}) is False
    assert evaluate("'trtllm_mha' in attention_backends_of(resolved_view(server_args))", settings, {}) is UNKNOWN
    assert evaluate("envs.SGLANG_ENABLE_SPEC_V2.get() and cfg.speculative_eagle_topk > 1", settings,
                    {"SGLANG_ENABLE_SPEC_V2": True}) is True


def test_vllm_has_no_tree(ctx, run):
    result = run("speculative-tree", ctx(options=Options(launch=read_line("vllm serve /m/t"))))
    assert result["verdict"] == "pass"
