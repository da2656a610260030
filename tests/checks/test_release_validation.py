"""release-validation: the launch line walked through the release's own validation (a small vLLM-shaped tree read by
the spec_validation probe, tests/spec_sources.py; the real releases are judged against their own builds by
tests/engine/test_validation_agreement.py): a raise it reaches fails with the release's message and a fix, a raise
it cannot rule out is "cannot tell" (never "works as is"), and the release's own build, where it ran, decides."""

from __future__ import annotations

import pytest

import spec_sources as src
from check_inputs import target
from compat.checks import Options
from compat.doctor.diagnose import CANNOT_TELL, WORKS, classify
from compat.launch_line import fixed_words, read_line, LineEdit
from compat.preflight import Preflight

ARGS = {"present": True, "location": "vllm/entrypoints/openai/cli_args.py",
        "parser": {"underscores_to_dashes": True, "allow_abbrev": True},
        "arguments": [
            {"name": "model_tag", "aliases": [], "value": "positional", "nargs": "?", "location": "cli_args.py:10"},
            {"name": "--tensor-parallel-size", "aliases": ["-tp"], "value": "int", "location": "arg_utils.py:2",
             "default": 1},
            {"name": "--speculative-config", "aliases": [], "value": "json", "location": "arg_utils.py:5"},
            {"name": "--spec-tokens", "aliases": [], "value": "int", "location": "arg_utils.py:6"},
        ]}


@pytest.fixture(scope="module")
def fact(tmp_path_factory):
    return src.spec_validation_fact(tmp_path_factory.mktemp("tree"))


def line(spec: str, more: str = "") -> str:
    return f"vllm serve /models/target --speculative-config '{spec}' {more}"


def check(ctx, run, fact, text, *, preflight=None, platform="cuda"):
    tgt = target("llama", "LlamaForCausalLM", 8, config=src.LLAMA)
    from check_inputs import drafter

    context = ctx("vllm", "0.18.0", report_changes={"spec_validation": fact, "cli_arguments": ARGS,
                                                      "speculative_config": {"rejects_unknown_keys": True}},
                  tgt=tgt, draft=drafter(src.DRAFTER, path="/models/eagle3-drafter", tgt=tgt),
                  options=Options(launch=read_line(text), preflight=preflight, platform=platform))
    return run("release-validation", context), context


def test_a_line_the_release_takes_passes(ctx, run, fact):
    result, _ = check(ctx, run, fact, line('{"method": "eagle3", "model": "/models/eagle3-drafter", "num_speculative_tokens": 3}'))
    assert result["verdict"] == "pass", result["detail"]
    assert result["validation"]["verdict"] == "passes"


def test_a_refusal_says_the_release_s_message_site_and_the_value_that_passes(ctx, run, fact):
    text = line('{"method": "eagle3", "model": "/models/eagle3-drafter"}')
    result, context = check(ctx, run, fact, text)
    assert result["verdict"] == "fail"
    assert "A speculative model was provided, but `num_speculative_tokens` was not provided" in result["detail"]
    assert result["location"].startswith("vllm/config/speculative.py:")
    edits = [LineEdit(**{k: v for k, v in e.items()}) for e in result["line_edits"]]
    assert [(e.key, e.value) for e in edits] == [("num_speculative_tokens", 3)]  # doctor's default, which the code takes
    fixed = read_line(fixed_words(read_line(text), edits))
    again, _ = check(ctx, run, fact, fixed.text)
    assert again["verdict"] == "pass"


def test_two_options_that_must_agree_are_fixed_by_the_value_compared(ctx, run, fact):
    result, _ = check(ctx, run, fact, line('{"method": "ngram", "prompt_lookup_min": 5, "prompt_lookup_max": 2, '
                                            '"num_speculative_tokens": 3}'))
    assert "prompt_lookup_min=5 must be <= prompt_lookup_max=2" in result["detail"]
    assert result["line_edits"] and result["line_edits"][0]["key"] in ("prompt_lookup_min", "prompt_lookup_max")


def test_what_cannot_be_told_is_a_warning_that_keeps_works_as_is_away(ctx, run, fact):
    from compat.checks import get_check

    result, context = check(ctx, run, fact, line('{"method": "suffix", "num_speculative_tokens": 3}'))
    assert result["verdict"] == "warn" and result.get("undecided") is True
    assert "has_arctic_inference(...)" in result["detail"]
    assert classify([get_check("release-validation")(context)]) == CANNOT_TELL != WORKS


def test_the_release_s_own_build_decides_and_a_disagreement_shows_both(ctx, run, fact):
    text = line('{"method": "eagle3", "model": "/models/eagle3-drafter", "num_speculative_tokens": 3}')
    refused = Preflight(True, python="/venv/bin/python", engine="vllm", release="0.18.0+cpu", platform="cuda", ok=False,
                        error={"type": "ValueError", "message": "no such thing", "site": "vllm/config/model.py:9"},
                        line=read_line(text).text)
    result, _ = check(ctx, run, fact, text, preflight=refused)
    assert result["verdict"] == "fail" and result["decided_by"] == "preflight" and result["agree"] is False
    assert "no such thing" in result["detail"] and "doctor's reading of its code said it lets it through" in result["detail"]
    took = Preflight(True, engine="vllm", release="0.18.0", platform="cuda", ok=True, line=read_line(text).text)
    result, _ = check(ctx, run, fact, text, preflight=took)
    assert result["verdict"] == "pass" and result["agree"] is True


@pytest.mark.parametrize("preflight, why", [
    (Preflight(True, engine="vllm", release="0.19.0", platform="cuda", ok=True), "it ran vllm 0.19.0, not 0.18.0"),
    (Preflight(True, engine="vllm", release="0.18.0", platform="cpu", ok=True), "it ran on cpu"),
    (Preflight(False, why="vllm does not import in /venv/bin/python: ImportError: x"), "does not import"),
])
def test_a_preflight_of_another_release_platform_or_none_leaves_it_to_the_code(ctx, run, fact, preflight, why):
    result, _ = check(ctx, run, fact, line('{"method": "eagle3", "model": "/models/eagle3-drafter"}'), preflight=preflight)
    assert result["verdict"] == "fail" and "decided_by" not in result  # the static reading, with the same verdict
    assert why in result["preflight_not_used"]
