"""method-name: the release has the method launched, under that name; a name it lacks names the releases that have
it; an alias is said (sglang#21272: NEXTN is EAGLE). Real releases' facts (method_facts/), real trainers' keys."""

import pytest

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


def test_a_line_spelling_the_other_engines_way_is_refused_with_the_release_spelling(run):
    line = "vllm serve /models/target --speculative-config '{\"method\": \"DFLASH\", \"model\": \"/models/drafter\"}'"
    result = run("method-name", ctx("vllm", "0.34.0", SPECFORGE_DFLASH, DFLASH_TENSORS, line=line))
    assert result["verdict"] == "fail" and "it accepts 'dflash'" in result["detail"]
    assert result["line_edits"][0]["value"] == "dflash"


def test_doctor_method_takes_the_other_engines_spelling_as_the_family(run):
    """`doctor --method DFLASH` without a line: the printed line runs vLLM's 'dflash', so the name is translated."""
    result = run("method-name", ctx("vllm", "0.34.0", SPECFORGE_DFLASH, DFLASH_TENSORS, method="DFLASH"))
    assert result["verdict"] == "pass" and "vllm 0.34.0 names it 'dflash'" in result["detail"]


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
    line = "vllm serve /models/target --speculative-config '{\"method\": \"DFlash\", \"model\": \"/models/drafter\"}'"
    assert run("method-name", ctx("vllm", "0.34.0", SPECFORGE_DFLASH, DFLASH_TENSORS, line=line))["verdict"] == "fail"


# -- the method as the engine resolves it (issue 38): real releases' facts, each step at the release's line ----------
QWEN3_06B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 28, "hidden_size": 1024,
             "vocab_size": 151936}  # Qwen/Qwen3-0.6B's config.json: a plain draft model for a Qwen3 target
GEMMA4_ASSISTANT = {"architectures": ["Gemma4AssistantForCausalLM"], "model_type": "gemma4_assistant", "hidden_size": 2560,
                    "vocab_size": 262144}  # what SGLang promotes EAGLE/NEXTN to FROZEN_KV_MTP for


def _resolution(context):
    from compat.checks._resolve import resolve

    return resolve(context)


def test_doctor_method_draft_model_is_sglangs_standalone(run):
    """`doctor --method draft_model --engine sglang`: compat's id, run as STANDALONE (spec_info.py:45 in 0.5.23), the
    name the printed line passes (it said "not a method of sglang" while printing that line)."""
    from compat.checks import suggested_launch

    context = ctx("sglang", "0.5.23", QWEN3_06B, method="draft_model")
    result = run("method-name", context)
    assert result["verdict"] == "pass" and result["location"] == "sglang/srt/speculative/spec_info.py:45"
    assert "'draft_model' is compat's id for draft model: sglang 0.5.23 names it 'STANDALONE'" in result["detail"]
    argv = suggested_launch(context)["argv"]
    assert argv[argv.index("--speculative-algorithm") + 1] == "STANDALONE"


def test_doctor_method_mtp_is_sglangs_nextn_run_as_eagle_not_the_gemma4_promotion():
    """`--method mtp` on a DeepSeek-V3 target: NEXTN (an alias: EAGLE, spec_info.py:60). FROZEN_KV_MTP is only what
    EAGLE/NEXTN are promoted to for a Gemma4 assistant draft (arg_groups/speculative_hook.py:110), never named."""
    from compat.checks import suggested_launch

    context = ctx("sglang", "0.5.23", None, tgt=target(DEEPSEEK_V3), method="mtp")
    res = _resolution(context)
    assert (res.passed, res.runs_as, res.family) == ("NEXTN", "EAGLE", "eagle")
    argv = suggested_launch(context)["argv"]
    assert argv[argv.index("--speculative-algorithm") + 1] == "NEXTN"


def test_sglang_promotes_eagle_to_frozen_kv_mtp_for_a_gemma4_assistant_draft(run):
    line = ("python -m sglang.launch_server --model-path /models/target --speculative-algorithm EAGLE "
            "--speculative-draft-model-path /models/drafter")
    context = ctx("sglang", "0.5.23", GEMMA4_ASSISTANT, line=line)
    result = run("method-name", context)
    assert context.method.family == "mtp" and result["verdict"] == "pass"
    assert "promotes it to FROZEN_KV_MTP for a Gemma4AssistantForCausalLM draft" in result["detail"]
    assert "sglang/srt/arg_groups/speculative_hook.py:110" in result["detail"]


def test_a_line_naming_compats_id_on_sglang_is_refused_with_standalone(run):
    line = ("python -m sglang.launch_server --model-path /models/target --speculative-algorithm draft_model "
            "--speculative-draft-model-path /models/drafter")
    result = run("method-name", ctx("sglang", "0.5.23", QWEN3_06B, line=line))
    assert result["verdict"] == "fail" and "the server refuses 'draft_model' at start-up" in result["detail"]
    assert result["line_edits"][0] | {"why": ""} == {"kind": "set", "why": "", "option": "--speculative-algorithm",
                                                    "value": "STANDALONE"}


@pytest.mark.parametrize("version, given, passed, runs", [
    ("0.18.0", "NEXTN", "mtp", "mtp"),  # SGLang's name for the family, vLLM's own
    ("0.18.0", "deepseek_mtp", "deepseek_mtp", "mtp"),  # renamed before it runs (speculative.py:354, a deprecation)
    ("0.10.0", "mtp", "deepseek_mtp", "deepseek_mtp"),  # 0.10.0 has no "mtp": its MTP method is deepseek_mtp
])
def test_vllm_mtp_names(version, given, passed, runs):
    res = _resolution(ctx("vllm", version, None, tgt=target(DEEPSEEK_V3), method=given))
    assert (res.passed, res.runs_as, res.family, res.refused) == (passed, runs, "mtp", None)


def test_the_deepseek_mtp_rename_is_said_at_its_line(run):
    line = "vllm serve /models/target --speculative-config '{\"method\": \"deepseek_mtp\", \"num_speculative_tokens\": 1}'"
    result = run("method-name", ctx("vllm", "0.18.0", None, tgt=target(DEEPSEEK_V3), line=line))
    assert result["verdict"] == "pass"
    assert "vllm 0.18.0 renames it to 'mtp' before it runs (vllm/config/speculative.py:354)" in result["detail"]


def test_a_draft_model_line_without_a_method_on_vllm_0_13_is_refused_vllm_31883(run):
    """vllm#31883: `--speculative_config '{"model": "/Qwen/Qwen3-0___6B", "num_speculative_tokens": 5}'` on 0.13.0 raises
    NotImplementedError("Speculative decoding with draft model is not supported yet", speculative.py:379): the
    release's detection picks draft_model and refuses it."""
    line = ("vllm serve /models/target --speculative_config '{\"model\": \"/models/drafter\", \"num_speculative_tokens\": 5}'")
    context = ctx("vllm", "0.13.0", QWEN3_06B, line=line)
    result = run("method-name", context)
    assert context.method.source == "the release's auto-detection" and context.method.family == "draft_model"
    assert result["verdict"] == "fail" and result["location"] == "vllm/config/speculative.py:379"
    assert "vllm 0.13.0 raises NotImplementedError for 'draft_model' there" in result["detail"]


def test_vllm_0_15_serves_a_draft_model_only_when_the_line_names_it(run):
    """0.15.1's detection has `elif self.method == "draft_model": pass` (speculative.py:409) but no default for a line
    without a method (0.17.0 adds it): the fix names the method."""
    bare = "vllm serve /models/target --speculative-config '{\"model\": \"/models/drafter\", \"num_speculative_tokens\": 5}'"
    result = run("method-name", ctx("vllm", "0.15.1", QWEN3_06B, line=bare))
    assert result["verdict"] == "fail" and "it serves no line without a method" in result["detail"]
    assert result["line_edits"][0]["value"] == "draft_model"
    named = bare.replace('{"model"', '{"method": "draft_model", "model"')
    assert run("method-name", ctx("vllm", "0.15.1", QWEN3_06B, line=named))["verdict"] == "pass"


def test_vllm_0_18_detection_overrides_an_explicit_draft_model_by_its_path(run):
    """Up to 0.33 only eagle/eagle3 (dflash, dspark later) are kept as configured (speculative.py:480 in 0.18.0); a
    draft model whose path holds "eagle3" runs as eagle3 (:488) whatever the line says (vllm#16636 fixed the same
    for an explicit eagle; 0.34.0 never overrides a configured method)."""
    line = ("vllm serve /models/target --speculative-config '{\"method\": \"draft_model\", \"model\": "
            "\"/models/qwen3-0.6b-eagle3-sft\", \"num_speculative_tokens\": 3}'")
    result = run("method-name", ctx("vllm", "0.18.0", QWEN3_06B, line=line))
    assert result["verdict"] == "fail" and "runs it as 'eagle3'" in result["detail"]
    assert result["location"] == "vllm/config/speculative.py:488"
    kept = line.replace("qwen3-0.6b-eagle3-sft", "qwen3-0.6b-sft")
    assert run("method-name", ctx("vllm", "0.18.0", QWEN3_06B, line=kept))["verdict"] == "pass"


def test_a_name_no_release_has_may_come_from_a_plugin_where_the_release_takes_plugins(run):
    """SGLang 0.5.23 lets a plugin register an algorithm (SpeculativeAlgorithm.register, spec_info.py:68; field notes
    2026-12 section 3): an unknown name is refused unless one does, and doctor cannot see the venv's plugins."""
    result = run("method-name", ctx("sglang", "0.5.23", None, method="LOOKAHEAD_X"))
    assert result["verdict"] == "fail" and "unless a plugin adds it (SpeculativeAlgorithm.register" in result["detail"]
    assert "plugin" not in run("method-name", ctx("sglang", "0.5.10", None, method="LOOKAHEAD_X"))["detail"]


def test_a_separate_nextn_export_is_seen_as_the_release_sees_it(run):
    """A DeepSeek-V3 NextN export as its own draft checkpoint (model_type deepseek_v3, e.g. lmsys/DeepSeek-V3-NextN,
    sgl-project/sglang#3582): vLLM builds the draft with SpeculativeConfig.hf_config_override, which makes it
    deepseek_mtp (speculative.py:216 in 0.18.0), so its detection keeps "mtp" (no NotImplementedError)."""
    nextn = {**DEEPSEEK_V3, "num_hidden_layers": 1}
    line = ("vllm serve /models/target --speculative-config '{\"method\": \"mtp\", \"model\": \"/models/dsv3-nextn\", "
            "\"num_speculative_tokens\": 1}'")
    result = run("method-name", ctx("vllm", "0.18.0", nextn, tgt=target(DEEPSEEK_V3), line=line))
    assert result["verdict"] == "pass" and result["resolution"]["raises"] is None
