"""method-layer-ids: the layers the release feeds a DFlash/DSpark drafter = the ones it was trained on, across the
releases before and after vllm#40727 (and the V2 runner's DFlash key in 0.24.0), for each trainer's convention:
SpecForge/z-lab output-of `dflash_config.target_layer_ids`, speculators capture-before `aux_hidden_state_layer_ids`
(speculators#456: vLLM maps them to i - 1), DeepSpec's top-level `target_layer_ids`; SGLang's target hooks."""

from method_inputs import (DEEPSPEC_DSPARK, DFLASH_TENSORS, QWEN3_8B, SPECFORGE_DFLASH, SPECULATORS_DFLASH, ctx, target)

TRAINED = [2, 10, 18, 26, 34]  # SpecForge's [1, 9, 17, 25, 33] are outputs of those layers: the stream entering +1


def test_specforge_dflash_on_vllm_0_24_is_fed_what_it_learned(run):
    result = run("method-layer-ids", ctx("vllm", "0.24.0", SPECFORGE_DFLASH, DFLASH_TENSORS))
    assert result["verdict"] == "pass" and result["trained_layer_ids"] == TRAINED
    assert {f["by"] for f in result["fed"]} == {"runner v1", "runner v2"}


def test_vllm_0_20_feeds_it_one_layer_low_on_the_runner_it_takes(run):
    """On cuda 0.20.0 builds the V1 runner (VLLM_USE_V2_MODEL_RUNNER unset, envs.py:249): its reader takes the ids as is
    (before vllm#40727); the V2 runner's (the default ids) is not the one that runs, so the drafter is not judged by it."""
    result = run("method-layer-ids", ctx("vllm", "0.20.0", SPECFORGE_DFLASH, DFLASH_TENSORS))
    assert result["verdict"] == "fail" and "silent wrong layers" in result["detail"]
    assert {f["by"]: f["ids"] for f in result["fed"]} == {"runner v1": [1, 9, 17, 25, 33]}


def test_a_runner_choice_the_release_leaves_open_keeps_both_readers(run):
    """0.24.0 picks V1 or V2 from a VllmConfig property (gpu_worker.py: `vllm_config.use_v2_model_runner`, which looks
    at the target's MoE-ness and the method): both readers may feed the drafter, both are judged (here they agree)."""
    result = run("method-layer-ids", ctx("vllm", "0.24.0", SPECFORGE_DFLASH, DFLASH_TENSORS))
    assert result["verdict"] == "pass" and {f["by"] for f in result["fed"]} == {"runner v1", "runner v2"}


def test_speculators_dflash_is_translated_before_it_is_read(run):
    result = run("method-layer-ids", ctx("vllm", "0.34.0", SPECULATORS_DFLASH))
    assert result["verdict"] == "pass" and result["trained_layer_ids"] == [2, 18, 33]
    assert result["fed"][0]["how"] == "eagle_aux_hidden_state_layer_ids + 0"  # the translation's first key


def test_deepspec_dense_dspark_ids_are_shifted_by_vllm(run):
    result = run("method-layer-ids", ctx("vllm", "0.34.0", DEEPSPEC_DSPARK, method="dspark"))
    assert result["verdict"] == "pass" and result["fed"][0]["how"] == "target_layer_ids + 1"


def test_sglang_hooks_capture_before_k_plus_one(run):
    result = run("method-layer-ids", ctx("sglang", "0.5.23", SPECFORGE_DFLASH, DFLASH_TENSORS))
    assert result["verdict"] == "pass" and result["fed"][0]["ids"] == TRAINED
    assert "Qwen3ForCausalLM" in result["fed"][0]["how"]


def test_a_target_without_the_hook_cannot_be_told(run):
    odd = target({**QWEN3_8B, "architectures": ["NoHookForCausalLM"]})
    result = run("method-layer-ids", ctx("sglang", "0.5.23", SPECFORGE_DFLASH, DFLASH_TENSORS, tgt=odd))
    assert result["verdict"] == "warn" and "has no DFLASH capture hook" in result["detail"]


def test_no_ids_written_means_the_trainers_default(run):
    config = {k: v for k, v in SPECFORGE_DFLASH.items() if k != "dflash_config"}
    result = run("method-layer-ids", ctx("vllm", "0.34.0", {**config, "dflash_config": {"mask_token_id": 1}}, DFLASH_TENSORS))
    assert result["trained_layer_ids"] == TRAINED  # build_target_layer_ids(36, 5) = [1, 9, 17, 25, 33], output-of
    assert result["verdict"] == "fail"  # vLLM reads nothing and feeds its default (2, 18, 33)
