"""method-target: the target implements what the method needs: the aux-hidden-state interface (vLLM) or the block
hook (SGLang) for DFlash/DSpark; for MTP, heads declared in its config and a release that maps it to an MTP drafter."""

import json

from method_inputs import DEEPSEEK_V3, DFLASH_TENSORS, QWEN3_8B, SPECFORGE_DFLASH, ctx, target


def test_qwen3_feeds_a_dflash_drafter_on_both_engines(run):
    assert run("method-target", ctx("vllm", "0.34.0", SPECFORGE_DFLASH, DFLASH_TENSORS))["verdict"] == "pass"
    assert run("method-target", ctx("sglang", "0.5.23", SPECFORGE_DFLASH, DFLASH_TENSORS))["verdict"] == "pass"


def test_a_target_without_the_interface_is_refused(run):
    odd = target({**QWEN3_8B, "architectures": ["BloomForCausalLM"]})
    vllm = run("method-target", ctx("vllm", "0.34.0", SPECFORGE_DFLASH, DFLASH_TENSORS, tgt=odd))
    assert vllm["verdict"] == "fail" and "Model does not support EAGLE3 interface" in vllm["detail"]
    sglang = run("method-target", ctx("sglang", "0.5.23", SPECFORGE_DFLASH, DFLASH_TENSORS, tgt=odd))
    assert sglang["verdict"] == "fail" and "set_dflash_layers_to_capture" in sglang["detail"]


def test_deepseek_v3_heads_run_as_deepseek_mtp(run):
    result = run("method-target", ctx("vllm", "0.34.0", None, tgt=target(DEEPSEEK_V3), method="deepseek_mtp"))
    assert result["verdict"] == "pass" and "runs its heads as 'deepseek_mtp'" in result["detail"]
    assert "model.layers.61" in result["detail"]
    sglang = run("method-target", ctx("sglang", "0.5.23", None, tgt=target(DEEPSEEK_V3), method="NEXTN"))
    assert sglang["verdict"] == "pass" and "DeepseekV3ForCausalLMNextN is registered" in sglang["detail"]


def test_a_target_without_heads(run):
    plain = target({**DEEPSEEK_V3, "num_nextn_predict_layers": 0})
    result = run("method-target", ctx("vllm", "0.34.0", None, tgt=plain, method="mtp"))
    assert result["verdict"] == "fail" and "declares no MTP layers" in result["detail"]


def test_heads_missing_from_the_checkpoint_are_left_to_the_loader_check(run, tmp_path):
    """Whether the checkpoint holds the heads is what the release's own MTP class says (method-tensors: a raise from
    vLLM 0.17.0, silence before it and on SGLang), not a rule of this check's."""
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"model.layers.0.mlp.up_proj.weight": "a.safetensors", "model.layers.60.mlp.up_proj.weight": "a.safetensors"}}))
    context = ctx("vllm", "0.34.0", None, tgt=target(DEEPSEEK_V3, str(tmp_path)), method="mtp")
    result = run("method-target", context)
    assert result["verdict"] == "pass" and "method-tensors" in result["detail"]
    assert run("method-tensors", context)["verdict"] == "fail"
