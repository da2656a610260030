"""method-tensors: the release's own class for the method, replayed on the checkpoint's names (real releases' loaders,
captured in method_facts/ by capture_method_facts.py; the checkpoints are names only, as the upstream threads had them).

FAIL where the release refuses, WARN where it loads silently wrong; SGLang's cases are modelled from its source
(compat never runs SGLang)."""

import json

from method_inputs import DEEPSEEK_V3, ctx, target

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
         "vocab_size": 256}
DRAFT_TENSORS = {"model.embed_tokens.weight": ("BF16", (256, 64)), "model.norm.weight": ("BF16", (64,)),
                 **{f"model.layers.{i}.self_attn.q_proj.weight": ("BF16", (64, 64)) for i in range(2)}}
QUANTIZED = {"quantization_config": {"quant_method": "fp8"}}


def deepseek(tmp_path, *, mtp: bool, extra: dict | None = None):
    """A DeepSeek-V3 target directory: its index lists the base layers, and layer 61 (the MTP layer) or not."""
    names = {"model.embed_tokens.weight", "lm_head.weight", "model.norm.weight", "model.layers.0.self_attn.q_a_proj.weight",
             "model.layers.60.mlp.gate_proj.weight"}
    if mtp:
        names |= {f"model.layers.61.{t}" for t in ("enorm.weight", "hnorm.weight", "eh_proj.weight", "shared_head.norm.weight",
                                                  "shared_head.head.weight", "self_attn.q_a_proj.weight")}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": dict.fromkeys(names, "a.safetensors")}))
    return target({**DEEPSEEK_V3, **(extra or {})}, str(tmp_path))


# -- MTP heads: vllm#35548 (GLM-5-NVFP4 shipped without its MTP layers: "Server loads, acceptance rates are 0.0") -----

def test_mtp_layer_missing_unquantized_is_refused_by_the_strict_loader_before_0_17(run, tmp_path):
    result = run("method-tensors", ctx("vllm", "0.16.0", None, tgt=deepseek(tmp_path, mtp=False), method="mtp"))
    assert result["verdict"] == "fail" and "model.layers.{61}" in result["detail"]
    assert "Following weights were not initialized from checkpoint" in result["detail"]
    assert result["location"].startswith("vllm/model_executor/model_loader/default_loader.py:")


def test_mtp_layer_missing_quantized_is_silent_before_0_17_and_refused_from_it(run, tmp_path):
    tgt = deepseek(tmp_path, mtp=False, extra=QUANTIZED)
    silent = run("method-tensors", ctx("vllm", "0.16.0", None, tgt=tgt, method="mtp"))
    assert silent["verdict"] == "warn" and "keep their initial values" in silent["detail"]
    refused = run("method-tensors", ctx("vllm", "0.20.0", None, tgt=tgt, method="mtp"))  # vllm#35548, from 0.17.0
    assert refused["verdict"] == "fail" and "MTP speculative decoding layer {layer_idx} weights missing" in refused["detail"]
    assert refused["location"].startswith("vllm/model_executor/models/deepseek_mtp.py:")


def test_0_34_dropped_the_explicit_check_so_a_quantized_checkpoint_is_silent_again(run, tmp_path):
    result = run("method-tensors", ctx("vllm", "0.34.0", None, tgt=deepseek(tmp_path, mtp=False, extra=QUANTIZED), method="mtp"))
    assert result["verdict"] == "warn" and "quantized" in result["detail"]


def test_mtp_layer_present_passes_and_names_the_class_the_override_picks(run, tmp_path):
    result = run("method-tensors", ctx("vllm", "0.34.0", None, tgt=deepseek(tmp_path, mtp=True), method="mtp"))
    assert result["verdict"] == "pass" and result["class"] == "DeepSeekMTP"
    assert "hf_config_override" in result["detail"]


def test_sglang_nextn_without_its_layer_loads_silently(run, tmp_path):
    """Modelled from SGLang's source: DeepseekV3ForCausalLMNextN keeps only model.layers.{num_hidden_layers}.* and
    nothing compares what was loaded (sglang#35797: Qwen3.5 MTP weights silently dropped, accept len pinned at 1.0)."""
    result = run("method-tensors", ctx("sglang", "0.5.23", None, tgt=deepseek(tmp_path, mtp=False), method="NEXTN"))
    assert result["verdict"] == "warn" and "model.layers.{61}" in result["detail"]
    assert "with no error" in result["detail"]
    assert run("method-tensors", ctx("sglang", "0.5.23", None, tgt=deepseek(tmp_path, mtp=True), method="NEXTN"))["verdict"] == "pass"


def test_sglang_0_4_4_refuses_a_full_config_as_the_nextn_draft(run):
    """0.4.4's NextN loader asserts the draft holds only the NextN layer (`assert num_nextn_layers ==
    self.config.num_hidden_layers`, deepseek_nextn.py): the full model's config as the draft fails before loading."""
    draft = {**DEEPSEEK_V3, "architectures": ["DeepseekV3ForCausalLMNextN"]}
    result = run("method-tensors", ctx("sglang", "0.4.4", draft, {"model.layers.0.eh_proj.weight": ("BF16", (2, 2))},
                                       tgt=target(DEEPSEEK_V3), method="NEXTN"))
    assert result["verdict"] == "fail" and "num_nextn_layers == self.config.num_hidden_layers" in result["detail"]
    assert result["location"].startswith("sglang/srt/models/deepseek_nextn.py:")


# -- a draft model without its lm_head (untied): vLLM's loader refuses weights it did not initialise (vllm#11802,
# default_loader.py), any causal LM being a draft model (vllm#24322); SGLang's LlamaForCausalLM keeps a random head ----

def test_draft_model_without_lm_head(run):
    untied = {**LLAMA, "tie_word_embeddings": False}
    vllm = run("method-tensors", ctx("vllm", "0.34.0", untied, DRAFT_TENSORS, tgt=target(LLAMA), method="draft_model"))
    assert vllm["verdict"] == "fail" and "lm_head" in vllm["detail"] and "not initialized from checkpoint" in vllm["detail"]
    sglang = run("method-tensors", ctx("sglang", "0.5.23", untied, DRAFT_TENSORS, tgt=target(LLAMA), method="STANDALONE"))
    assert sglang["verdict"] == "warn" and "lm_head" in sglang["detail"] and "with no error" in sglang["detail"]


def test_a_tied_draft_model_needs_no_lm_head(run):
    tied = {**LLAMA, "tie_word_embeddings": True}
    assert run("method-tensors", ctx("vllm", "0.34.0", tied, DRAFT_TENSORS, tgt=target(LLAMA), method="draft_model"))["verdict"] == "pass"
    assert run("method-tensors", ctx("sglang", "0.5.23", tied, DRAFT_TENSORS, tgt=target(LLAMA), method="STANDALONE"))["verdict"] == "pass"


# -- Medusa heads named the FasterDecoding way (`0.0.linear.weight`, lmdeploy#1180 lists medusa-vicuna-13b-v1.3's keys):
# vLLM's Medusa drops them (`elif name in params_dict`, medusa.py) and then its loader refuses the heads it never
# loaded; 0.25.0 maps them (`Medusa._remap_old_checkpoint_key`, run here on each name) ------------------------------

MEDUSA = {"architectures": ["MedusaModel"], "model_type": "medusa", "num_heads": 2, "num_hidden_layers": 1, "hidden_size": 64,
          "vocab_size": 256, "truncated_vocab_size": 256}
FASTERDECODING = {**{f"{h}.0.linear.{p}": ("F16", (64,)) for h in range(2) for p in ("weight", "bias")},
                  **{f"{h}.1.weight": ("F16", (256, 64)) for h in range(2)}}


def test_medusa_heads_named_the_old_way(run):
    old = run("method-tensors", ctx("vllm", "0.24.0", MEDUSA, FASTERDECODING, method="medusa"))
    assert old["verdict"] == "fail" and "blocks.{0, 1}" in old["detail"] and "0.0.linear.weight" in old["detail"]
    new = run("method-tensors", ctx("vllm", "0.25.0", MEDUSA, FASTERDECODING, method="medusa"))
    assert new["verdict"] == "pass", new["detail"]  # Medusa._remap_old_checkpoint_key, run on each name


# -- DFlash: a checkpoint the class takes whole, and a stray tensor: vLLM's AutoWeightsLoader raises ("There is no
# module or parameter named", utils.py), SGLang's DFlashDraftModel resolves names and drops the rest (dflash.py) ------

DFLASH = {"architectures": ["DFlashDraftModel"], "block_size": 16, "model_type": "qwen3", "num_hidden_layers": 1,
          "hidden_size": 64, "vocab_size": 256, "dflash_config": {"mask_token_id": 5, "target_layer_ids": [1, 2]}}
DFLASH_NAMES = {n: ("BF16", (2,)) for n in ("fc.weight", "hidden_norm.weight", "norm.weight", "layers.0.input_layernorm.weight",
                                            "layers.0.self_attn.q_proj.weight", "layers.0.mlp.up_proj.weight")}


def test_dflash_drafter_lands_whole_and_a_stray_tensor_is_refused_or_dropped(run):
    tgt = target({**LLAMA, "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 4})
    assert run("method-tensors", ctx("vllm", "0.34.0", DFLASH, DFLASH_NAMES, tgt=tgt, method="dflash"))["verdict"] == "pass"
    assert run("method-tensors", ctx("sglang", "0.5.23", DFLASH, DFLASH_NAMES, tgt=tgt, method="DFLASH"))["verdict"] == "pass"
    stray = {**DFLASH_NAMES, "foo.weight": ("BF16", (2,))}
    vllm = run("method-tensors", ctx("vllm", "0.34.0", DFLASH, stray, tgt=tgt, method="dflash"))
    assert vllm["verdict"] == "fail" and "foo.weight" in vllm["detail"] and "AutoWeightsLoader raises" in vllm["detail"]
    sglang = run("method-tensors", ctx("sglang", "0.5.23", DFLASH, stray, tgt=tgt, method="DFLASH"))
    assert sglang["verdict"] == "warn" and "dropped without being loaded: foo.weight" in sglang["detail"]


def test_without_the_class_loaders_it_says_it_cannot_tell(run, tmp_path):
    context = ctx("vllm", "0.34.0", None, tgt=deepseek(tmp_path, mtp=True), method="mtp")
    context.loaders = None
    result = run("method-tensors", context)
    assert result["verdict"] == "warn" and result["detail"].startswith("cannot tell")


# -- EAGLE-1 heads trained with an fc bias (SafeAILab's cnets1.py: vllm#22323, vllm#22558): vLLM builds fc without one,
# so LlamaModel.load_weights looks model.fc.bias up and raises (0.20.0); AutoWeightsLoader ignores unexpected biases
# from 0.25 (utils.py: `ignore_unexpected_suffixes.append(".bias")`): the trained bias is dropped ---------------------

SAFEAILAB_EAGLE = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 1, "hidden_size": 64,
                   "vocab_size": 256, "bias": True}
EAGLE_TENSORS = {n: ("F16", (2,)) for n in ("fc.weight", "fc.bias", "layers.0.self_attn.q_proj.weight",
                                            "layers.0.mlp.gate_proj.weight", "layers.0.post_attention_layernorm.weight")}


def test_an_eagle_head_with_an_fc_bias(run):
    old = run("method-tensors", ctx("vllm", "0.20.0", SAFEAILAB_EAGLE, EAGLE_TENSORS, tgt=target(LLAMA), method="eagle"))
    assert old["verdict"] == "fail" and "fc.bias (looked up as model.fc.bias)" in old["detail"]
    assert old["class"] == "EagleLlamaForCausalLM"  # EAGLEConfig's rename of LlamaForCausalLM for method eagle
    new = run("method-tensors", ctx("vllm", "0.34.0", SAFEAILAB_EAGLE, EAGLE_TENSORS, tgt=target(LLAMA), method="eagle"))
    assert new["verdict"] == "warn" and "dropped without being loaded: fc.bias" in new["detail"]


def test_a_speculators_dspark_drafter_is_judged_as_the_class_its_translation_names(run):
    speculators = {"speculators_model_type": "dspark", "architectures": ["DSparkSpeculator"], "block_size": 8,
                   "aux_hidden_state_layer_ids": [2, 3], "mask_token_id": 5, "draft_vocab_size": 256, "markov_rank": 16,
                   "speculators_config": {"algorithm": "dspark"}, "sample_from_anchor": True,
                   "transformer_layer_config": {"model_type": "qwen3", "num_hidden_layers": 1, "hidden_size": 64,
                                                "vocab_size": 256}}
    tgt = target({**LLAMA, "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"})
    result = run("method-tensors", ctx("vllm", "0.34.0", speculators, DFLASH_NAMES, tgt=tgt, method="dspark"))
    assert result["class"] == "Qwen3DSparkForCausalLM" and "speculators translation" in result["detail"]
