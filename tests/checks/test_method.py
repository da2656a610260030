"""method: eagle3 must exist and be asked for explicitly."""

import pytest

from compat.checks import Options
from check_inputs import drafter


def test_vllm_eagle3_method_passes(ctx, run):
    assert run("method", ctx())["verdict"] == "pass"


def test_vllm_without_eagle3_fails(ctx, run):
    sc = {**ctx().report["speculative_config"], "methods": ["eagle", "mtp"]}
    assert run("method", ctx(report_changes={"speculative_config": sc}))["verdict"] == "fail"


def test_asking_for_another_method_fails(ctx, run):
    result = run("method", ctx(options=Options(extra_spec={"method": "eagle"})))
    assert result["verdict"] == "fail" and "wrong head" in result["detail"]


@pytest.mark.parametrize("version, trapped", [("0.10.1", True), ("0.10.2", False)])
def test_the_eagle3_path_trap_is_named_where_it_exists(ctx, run, version, trapped):
    d = drafter(path="/models/kimi-eagle3-drafter")
    assert ("run this drafter as 'eagle'" in run("method", ctx("vllm", version, draft=d))["detail"]) is trapped


def test_sglang_needs_eagle3_among_the_algorithm_choices(ctx, run):
    assert run("method", ctx("sglang"))["verdict"] == "pass"
    flags = [{"name": "--speculative-algorithm", "choices": ["EAGLE", "NEXTN"]}]
    assert run("method", ctx("sglang", report_changes={"cli_flags": flags}))["verdict"] == "fail"
