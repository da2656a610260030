"""A check on an engine compat does not read its facts from yet says it cannot tell, and doctor's verdict says so,
instead of answering with another engine's assumptions.

Modelled: LMDeploy's report has its own probe keys (probes/lmdeploy/: since the second wave of issue 39 also
drafter_loader, eagle3_drafters, target_architectures, cli_arguments, final_layer_capture, draft_dtype,
eagle3_whitelist, method_packages, but no speculators_format); the checks' `needs` name vLLM's and SGLang's facts
per engine.
"""

from __future__ import annotations

from check_inputs import drafter, make_ctx, report, target

from compat.checks import FAIL, PASS, WARN, Ctx, Options, Result, get_check
from compat.doctor.diagnose import UNCHECKED, WORKS, classify


def lmdeploy_ctx():
    tgt = target()
    return Ctx({**report("sglang"), "engine": "lmdeploy", "version": "0.18.0"}, tgt, drafter(tgt=tgt), Options())


def test_a_check_named_per_engine_without_this_engine_cannot_tell():
    # needs={"vllm": ("speculators_format", ...), "sglang": ("speculators_format",)}: no LMDeploy probe reads any of them
    result = get_check("drafter-translation")(lmdeploy_ctx())
    assert result.verdict == WARN and result.unread and result.detail.endswith("which compat does not read from LMDeploy yet")
    # an engine a per-engine check names nothing for, but whose probes read some of its facts, runs as before
    # (speculative-tree names SGLang's facts only: vLLM drafts a chain, and passes)
    assert not get_check("speculative-tree").unread_facts("vllm")


def test_a_check_whose_fact_this_engine_has_no_probe_for_cannot_tell():
    from compat.checks import Check

    never = Check("never-read", "a check of a fact no probe reads", 1, ("no_such_fact",), (), lambda ctx: Result(PASS, "ran"))
    result = never(lmdeploy_ctx())
    assert result.verdict == WARN and result.unread and "no_such_fact" in result.detail


def test_the_checks_of_the_facts_the_second_wave_reads_run_on_lmdeploy():
    for check in ("vocab-maps", "drafter-tensors", "drafter-config", "drafter-architecture", "target-architecture",
                  "target-whitelist", "final-layer", "draft-dtype", "aux-inputs", "method-venv"):
        assert get_check(check).unread_facts("lmdeploy") is None, check


def test_a_check_whose_facts_are_read_runs():
    assert not get_check("layer-ids")(lmdeploy_ctx()).unread  # aux_layer_ids, eagle3_targets: LMDeploy's probes read them
    assert not get_check("launch-command")(make_ctx("sglang")).unread  # SGLang's own facts: unchanged
    assert not get_check("launch-command")(lmdeploy_ctx()).unread  # cli_flags: LMDeploy's probes read it


def test_the_verdict_is_not_works_while_a_check_is_unread():
    unread = Result(WARN, "cannot tell", unread=True)
    assert classify([Result(PASS, "ok"), unread]) == UNCHECKED
    assert classify([Result(PASS, "ok"), Result(WARN, "a warning")]) == WORKS
    assert classify([Result(FAIL, "broken"), unread]) != UNCHECKED  # a failure still decides


def test_the_line_doctor_prints_for_lmdeploy_uses_its_flags_and_its_speculating_backend():
    """Modelled on LMDeploy 0.18.0's facts (probes/lmdeploy/cli_flags.py, speculative_backend.py): a chain of draft
    tokens (no steps x topk), its --speculative-draft-model, and --backend pytorch, without which the default
    TurboMind engine serves with no drafter (a warning, no error: serve/core/async_engine.py:148)."""
    from compat.checks import suggested_launch

    tgt = target()
    flags = [{"name": n, "location": "lmdeploy/cli/utils.py:835"} for n in
             ("--speculative-algorithm", "--speculative-draft-model", "--speculative-num-draft-tokens")]
    backend = {"present": True, "speculates": "pytorch", "flag": {"name": "--backend", "default": "turbomind"}}
    ctx = Ctx({**report("sglang"), "engine": "lmdeploy", "version": "0.18.0", "cli_flags": flags,
               "speculative_backend": backend}, tgt, drafter(tgt=tgt), Options(num_speculative_tokens=3))
    line = suggested_launch(ctx, "/d")
    assert line["argv"][:5] == ["lmdeploy", "serve", "api_server", line["argv"][3], "--backend"] and line["argv"][5] == "pytorch"
    assert line["argv"][-6:] == ["--speculative-algorithm", line["argv"][-5], "--speculative-draft-model", "/d",
                                 "--speculative-num-draft-tokens", "3"]
    assert line["problems"] == []
