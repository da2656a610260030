"""A check on an engine compat does not read its facts from yet says it cannot tell, and doctor's verdict says so,
instead of answering with another engine's assumptions.

Modelled: LMDeploy's report has its own probe keys (probes/lmdeploy/: since the second wave of issue 39 also
drafter_loader, eagle3_drafters, target_architectures, cli_arguments, final_layer_capture, draft_dtype,
eagle3_whitelist, method_packages, but no speculators_format); the checks' `needs` are terms of the shared
vocabulary (compat/fact_vocabulary.py), and compat/engines/lmdeploy.py's FACTS says which of them its facts provide.
"""

from __future__ import annotations

from check_inputs import drafter, make_ctx, report, target

from compat.checks import FAIL, PASS, WARN, Ctx, Options, Result, get_check
from compat.doctor.diagnose import UNCHECKED, WORKS, classify


def lmdeploy_ctx():
    tgt = target()
    return Ctx({**report("sglang"), "engine": "lmdeploy", "version": "0.18.0"}, tgt, drafter(tgt=tgt), Options())


def test_a_check_needing_a_term_this_engine_does_not_provide_cannot_tell_naming_the_term():
    # "speculators translation": no LMDeploy probe reads a speculators-format translation, so its FACTS leaves it out
    result = get_check("drafter-translation")(lmdeploy_ctx())
    assert result.verdict == WARN and result.unread
    assert result.detail == ("cannot tell: this check reads speculators translation, which compat does not read from "
                             "LMDeploy yet")
    # a term an engine answers from its unit's fields (no probe fact): vLLM drafts a chain, so it has no tree rules
    assert not get_check("speculative-tree").unread_facts("vllm") and get_check("speculative-tree").needed_facts("vllm") == ()
    # the draft takes the target's engine config on LMDeploy: no check models it yet, so these cannot tell
    for check in ("draft-quantization", "draft-tensor-parallel", "draft-attention-backend"):
        assert get_check(check).unread_facts("lmdeploy"), check


def test_a_check_needs_terms_the_engines_map_to_their_own_probe_keys():
    draft_tp = get_check("draft-tensor-parallel")
    assert draft_tp.needs == ("draft parallelism", "launch options")
    assert draft_tp.needed_facts("vllm") == ("draft_parallel_rules", "cli_arguments", "speculative_config")
    assert draft_tp.needed_facts("sglang") == ("cli_arguments",)  # the target's parallelism: no rule fact


def test_a_check_naming_a_fact_outside_the_vocabulary_is_refused():
    import pytest

    from compat.checks import check

    with pytest.raises(ValueError, match=r"^check x: needs \['aux_layer_ids'\], not terms of compat/fact_vocabulary.py"):
        check("x", "x", order=1, needs=("aux_layer_ids",))


def test_a_check_whose_term_this_engine_leaves_out_cannot_tell():
    from compat.checks import Check

    never = Check("never-read", "a check of a term no engine provides", 1, ("weights check",), (), lambda ctx: Result(PASS, "ran"))
    result = never(lmdeploy_ctx())
    assert result.verdict == WARN and result.unread and "weights check" in result.detail


def test_the_checks_of_the_facts_the_second_wave_reads_run_on_lmdeploy():
    for check in ("vocab-maps", "drafter-tensors", "drafter-config", "drafter-architecture", "target-architecture",
                  "target-whitelist", "final-layer", "draft-dtype", "aux-inputs", "method-venv"):
        assert get_check(check).unread_facts("lmdeploy") is None, check


def test_a_check_whose_facts_are_read_runs():
    assert not get_check("layer-ids")(lmdeploy_ctx()).unread  # aux_layer_ids, eagle3_targets: LMDeploy's probes read them
    assert not get_check("launch-command")(make_ctx("sglang")).unread  # SGLang's own facts: unchanged
    assert not get_check("launch-command")(lmdeploy_ctx()).unread  # "launch flags": cli_flags, speculative_backend


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
