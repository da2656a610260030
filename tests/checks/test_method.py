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


# -- the method a launch line (or --method) runs --------------------------------------------------------------
def _line(text):
    from compat.launch_line import read_line

    return Options(launch=read_line(text))


def test_a_vllm_line_running_eagle_fails_and_the_printed_line_says_eagle3(ctx, run):
    result = run("method", ctx(options=_line("vllm serve /m/t --speculative-config "
                                             "'{\"method\": \"eagle\", \"model\": \"/m/d\"}'")))
    assert result["verdict"] == "fail" and "the launch line runs method='eagle'" in result["detail"]
    assert result["line_edits"][0] | {"why": ""} == {"kind": "spec", "why": "", "key": "method", "value": "eagle3"}


@pytest.mark.parametrize("version, path, verdict", [
    ("0.10.1", "/models/kimi-eagle3-drafter", "fail"),  # the release guesses 'eagle' from "eagle" in the path
    ("0.18.0", "/models/kimi-eagle3-drafter", "pass"),
])
def test_a_vllm_line_without_method_gets_what_the_release_guesses(ctx, run, version, path, verdict):
    d = drafter(path=path)
    result = run("method", ctx("vllm", version, draft=d, options=_line(
        f"vllm serve /m/t --speculative-config '{{\"model\": \"{path}\", \"num_speculative_tokens\": 3}}'")))
    assert result["verdict"] == verdict, result["detail"]
    assert result["line_edits"][0]["value"] == "eagle3"  # said explicitly in the printed line either way


@pytest.mark.parametrize("algorithm, verdict, said", [
    ("EAGLE", "fail", "accept length 1.00"),
    ("EAGLE3", "pass", "passes --speculative-algorithm EAGLE3"),
    (None, "fail", "the drafter is not used at all"),
])
def test_an_sglang_line_runs_the_algorithm_it_names(ctx, run, algorithm, verdict, said):
    flag = f" --speculative-algorithm {algorithm}" if algorithm else ""
    result = run("method", ctx("sglang", options=_line(
        f"python -m sglang.launch_server --model-path /m/t --speculative-draft-model-path /m/d{flag}")))
    assert result["verdict"] == verdict and said in result["detail"]


def test_method_without_a_line(ctx, run):
    assert run("method", ctx("sglang", options=Options(method="EAGLE")))["verdict"] == "fail"
    assert run("method", ctx(options=Options(method="eagle")))["verdict"] == "fail"
    assert run("method", ctx(options=Options(method="eagle3")))["verdict"] == "pass"
