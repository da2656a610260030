"""method-drafter: the drafter was trained for the method launched (its trainer's keys say which); a drafter no
method file recognises is answered with the keys read. Real releases' facts, real trainers' keys."""

from method_inputs import (DEEPSEEK_V3, DFLASH_TENSORS, PEAGLE_TENSORS, SPECFORGE_DFLASH, SPECFORGE_PEAGLE,
                           SPECULATORS_DSPARK, ctx, target)


def test_a_dflash_drafter_launched_as_eagle3_is_run_as_dflash(run):
    context = ctx("vllm", "0.34.0", SPECFORGE_DFLASH, DFLASH_TENSORS, method="eagle3")
    assert context.method.family == "dflash"  # the drafter's keys decide which checks run
    result = run("method-drafter", context)
    assert result["verdict"] == "fail" and "a DFlash drafter (architectures ['DFlashDraftModel']" in result["detail"]
    assert "launched as 'eagle3' (EAGLE-3)" in result["detail"] and result["line_edits"][0]["value"] == "dflash"


def test_the_same_on_sglang_sets_the_algorithm(run):
    result = run("method-drafter", ctx("sglang", "0.5.23", SPECFORGE_DFLASH, DFLASH_TENSORS,
                                       line="python -m sglang.launch_server --model-path /m/t --speculative-algorithm EAGLE "
                                            "--speculative-draft-model-path /m/d"))
    assert result["verdict"] == "fail"
    edit = result["line_edits"][0]
    assert edit["option"] == "--speculative-algorithm" and edit["value"] == "DFLASH"


def test_a_speculators_dspark_drafter_run_as_dspark_passes(run):
    result = run("method-drafter", ctx("vllm", "0.34.0", SPECULATORS_DSPARK, method="dspark"))
    assert result["verdict"] == "pass" and "speculators_model_type 'dspark'; trainer speculators" in result["detail"]


def test_an_unrecognised_drafter_says_which_keys_were_read(run):
    result = run("method-drafter", ctx("vllm", "0.34.0", {"architectures": ["MysteryDraft"]}, {"w": ("F32", (2, 2))},
                                       method="dflash"))
    assert result["verdict"] == "warn" and "dflash_config" in result["detail"] and "MysteryDraft" in result["detail"]


def test_p_eagle_needs_parallel_drafting_on_the_line(run):
    line = 'vllm serve /m/t --speculative-config \'{"method": "eagle3", "model": "/m/d", "num_speculative_tokens": 3}\''
    result = run("method-drafter", ctx("vllm", "0.33.0", SPECFORGE_PEAGLE, PEAGLE_TENSORS, line=line))
    assert result["verdict"] == "fail" and result["line_edits"][0]["key"] == "parallel_drafting"
    ok = line.replace('"num_speculative_tokens": 3', '"num_speculative_tokens": 3, "parallel_drafting": true')
    assert run("method-drafter", ctx("vllm", "0.33.0", SPECFORGE_PEAGLE, PEAGLE_TENSORS, line=ok))["verdict"] == "pass"


def test_sglang_eagle_runs_nextn_heads():
    from compat.checks import get_check

    context = ctx("sglang", "0.5.23", DEEPSEEK_V3, {"model.layers.61.eh_proj.weight": ("BF16", (7168, 14336))},
                  tgt=target(DEEPSEEK_V3), method="EAGLE")
    assert context.method.family == "mtp" and get_check("method-drafter")(context).verdict == "pass"


def test_a_method_without_a_drafter(run):
    result = run("method-drafter", ctx("vllm", "0.34.0", None, method="ngram"))
    assert result["verdict"] == "pass" and result["detail"] == "n-gram takes no drafter"
