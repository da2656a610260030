"""method-name: the release has the method launched, under that name; a name it lacks names the releases that have
it; an alias is said (sglang#21272: NEXTN is EAGLE). Real releases' facts (method_facts/), real trainers' keys."""

from method_inputs import (DEEPSEEK_V3, DFLASH_TENSORS, PEAGLE_TENSORS, SPECFORGE_DFLASH, SPECFORGE_PEAGLE, ctx,
                           target)


def test_dflash_arrives_in_sglang_0_5_11(run):
    before = run("method-name", ctx("sglang", "0.5.10", SPECFORGE_DFLASH, DFLASH_TENSORS, method="DFLASH"))
    assert before["verdict"] == "fail" and before["release"] == ">=0.5.11"
    assert "DFLASH (>=0.5.11)" in before["detail"]
    after = run("method-name", ctx("sglang", "0.5.11", SPECFORGE_DFLASH, DFLASH_TENSORS, method="DFLASH"))
    assert after["verdict"] == "pass" and after["location"] == "sglang/srt/speculative/spec_info.py:18"


def test_without_a_method_the_drafters_family_is_named_by_the_release(run):
    result = run("method-name", ctx("vllm", "0.20.0", SPECFORGE_DFLASH, DFLASH_TENSORS))
    assert result["verdict"] == "pass" and "'dflash' is a method of vllm 0.20.0" in result["detail"]


def test_nextn_is_an_alias_that_runs_as_eagle():
    from compat.checks import get_check

    context = ctx("sglang", "0.5.23", None, tgt=target(DEEPSEEK_V3), method="NEXTN")
    result = get_check("method-name")(context)
    assert context.method.family == "mtp" and result.verdict == "pass"
    assert "it is an alias: sglang 0.5.23 runs it as EAGLE" in result.detail
    assert result.location == "sglang/srt/speculative/spec_info.py:60"  # from_string: the reserved alias


def test_a_name_spelled_the_other_engines_way_is_refused_with_the_release_spelling(run):
    result = run("method-name", ctx("vllm", "0.34.0", SPECFORGE_DFLASH, DFLASH_TENSORS, method="DFLASH"))
    assert result["verdict"] == "fail" and "it accepts 'dflash'" in result["detail"]
    assert result["line_edits"][0]["value"] == "dflash"


def test_p_eagle_is_served_by_0_33_and_refused_by_0_34(run):
    old = run("method-name", ctx("vllm", "0.33.0", SPECFORGE_PEAGLE, PEAGLE_TENSORS, method="eagle3"))
    assert old["verdict"] == "pass" and "P-EAGLE" in old["detail"]
    new = run("method-name", ctx("vllm", "0.34.0", SPECFORGE_PEAGLE, PEAGLE_TENSORS, method="eagle3"))
    assert new["verdict"] == "fail" and "does not serve P-EAGLE" in new["detail"]
    assert "P-EAGLE (parallel drafting EAGLE-3) is not supported." in new["detail"]


def test_dspark_before_vllm_0_25_names_the_release_it_arrives_in(run):
    result = run("method-name", ctx("vllm", "0.24.0", None, method="dspark"))
    assert result["verdict"] == "fail" and result["release"] == ">=0.25.0"


def test_a_name_no_release_has_lists_the_releases_methods(run):
    result = run("method-name", ctx("sglang", "0.5.23", None, method="LOOKAHEAD_X"))
    assert result["verdict"] == "fail" and "it accepts DFLASH, UNO, DSPARK" in result["detail"] and "NEXTN" in result["detail"]


def test_not_run_for_eagle3():
    from compat.checks import get_check
    from check_inputs import make_ctx

    assert not get_check("method-name").applies(make_ctx())


def test_sglang_folds_the_case_vllm_does_not(run):
    """SGLang's from_string upper-cases the name (spec_info.py:55 in 0.5.23): `dflash` is DFLASH there, not on vLLM."""
    assert run("method-name", ctx("sglang", "0.5.23", SPECFORGE_DFLASH, DFLASH_TENSORS, method="dflash"))["verdict"] == "pass"
    assert run("method-name", ctx("vllm", "0.34.0", SPECFORGE_DFLASH, DFLASH_TENSORS, method="DFlash"))["verdict"] == "fail"
