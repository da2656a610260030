"""Facts the matrix checks the probes against, established independently of this project.

Each table is transcribed from ../shared/research (read from every released wheel by hand,
with grep and ast), with the section it comes from. The probes never read these: they read
the engine's source. A disagreement is a probe bug or a research error, to be settled by
reading the release's source.
"""

from packaging.version import Version

# vllm-eagle3.md §2.2: the EAGLE-3 target model-type whitelist, in source order.
_WL_0_10_1 = ["llama", "qwen"]
_WL_0_11_0 = _WL_0_10_1 + ["minicpm", "gpt_oss"]
_WL_0_16_0 = _WL_0_11_0 + ["hunyuan_vl", "hunyuan_v1_dense", "afmoe"]
_WL_0_17_0 = _WL_0_16_0 + ["nemotron_h"]
_WL_0_18_0 = _WL_0_17_0 + ["deepseek_v2", "deepseek_v3", "kimi_k2", "kimi_k25"]
_WL_0_19_1 = _WL_0_18_0 + ["minimax_m2", "gemma4"]
_WL_0_21_0 = _WL_0_19_1 + ["laguna"]
VLLM_WHITELIST = [  # (first release, list or None when there is no whitelist)
    ("0.10.0", ["llama"]),
    ("0.10.1", _WL_0_10_1),
    ("0.11.0", _WL_0_11_0),
    ("0.16.0", _WL_0_16_0),
    ("0.17.0", _WL_0_17_0),
    ("0.18.0", _WL_0_18_0),
    ("0.19.1", _WL_0_19_1),
    ("0.21.0", _WL_0_21_0),
    ("0.22.0", None),
]

# vllm-eagle3.md §1.3: number of SpeculativeConfig fields.
VLLM_SPEC_FIELD_COUNT = [
    ("0.10.0", 19), ("0.11.0", 21), ("0.11.1", 22), ("0.15.0", 23), ("0.16.0", 24), ("0.17.0", 25),
    ("0.18.0", 26), ("0.19.0", 28), ("0.20.0", 29), ("0.21.0", 30), ("0.24.0", 31), ("0.25.0", 32),
    ("0.26.0", 33), ("0.28.0", 35), ("0.29.0", 36), ("0.30.0", 37), ("0.33.0", 43),
    ("0.34.0", 45),  # counted by reading the class body: custom_method, draft_decode_context_parallel_size,
    # speculator_options, suffix_decoding_corpus_tokens in; disable_padded_drafter_batch, use_heterogeneous_vocab out
]

# vllm-eagle3.md Key findings 2, §3.4: DeepseekV2ForCausalLM (and V3, Kimi-K2's class) gain SupportsEagle3.
VLLM_DEEPSEEK_EAGLE3_FROM = "0.18.0"
# §3.4: KimiK25ForConditionalGeneration declares SupportsEagle3 from 0.18.0.
VLLM_KIMI_K25_EAGLE3_FROM = "0.18.0"
# §4.1: the MLA drafter architectures.
VLLM_MLA_DRAFTER_FROM = "0.18.0"
# §4.1: LlamaForCausalLMEagle3 (the SpecForge name) registered from 0.10.2.
VLLM_SPECFORGE_NAME_FROM = "0.10.2"
# §3.3: drafter-config layer ids read from 0.11.1 (top level); nested eagle_config from 0.22.0 (v1 runner).
VLLM_CONFIG_IDS_FROM = "0.11.1"
VLLM_NESTED_IDS_FROM = "0.22.0"
# 0.34.0: vllm/v1/worker/gpu_model_runner.py and vllm/v1/spec_decode/eagle.py are gone; the gpu/ runner (v2) is the
# only one, and it reads eagle_config.layer_ids, not eagle_config.eagle_aux_hidden_state_layer_ids.
VLLM_V1_RUNNER_REMOVED_IN = "0.34.0"
# §6: the -sc alias from 0.19.0; --spec-method/--spec-model/--spec-tokens from 0.22.0.
VLLM_SC_ALIAS_FROM = "0.19.0"
VLLM_SPEC_SHORT_FLAGS_FROM = "0.22.0"

# sglang-eagle3.md Key findings 1, 2, 3, 4, 6.
SGLANG_EAGLE3_FROM = "0.4.4.post2"
SGLANG_DEEPSEEK_EAGLE3_FROM = "0.5.4.post2"
SGLANG_KIMI_K25_EAGLE3_FROM = "0.5.10"
SGLANG_MLA_DRAFTER_FROM = "0.5.12"
SGLANG_DEEPSEEK_CONDITIONAL_OFFSET_FROM = "0.5.13"
# sglang-eagle3.md Key findings 5 and 7: drafter ids read from eagle_config from 0.4.9; the CUDA-graph
# runner captures with the default ids before the drafter's are applied in 0.4.9 - 0.5.10 (fixed 0.5.11).
SGLANG_CONFIG_IDS_FROM = "0.4.9"
SGLANG_CUDA_GRAPH_QUIRK = ("0.4.9", "0.5.11")


def value_at(table, version):
    """The value of a (first release, value) change table at `version`."""
    current = None
    for first, value in table:
        if Version(version) >= Version(first):
            current = value
    return current


def since(version, first):
    return Version(version) >= Version(first)


# -- drafter loaders, renames and method detection (the `loader` probes) ------------------------------
# vllm-eagle3.md §4.2 (drafter classes, per version) and checkpoint-formats.md §3.1.
VLLM_MULTI_LAYER_FROM = "0.11.1"  # LlamaModel builds num_hidden_layers layers (0.10.x-0.11.0: exactly one)
VLLM_FC_FROM_AUX_COUNT_FROM = "0.22.0"  # fc input = target_hidden_size x (num_aux_hidden_states | len(eagle_config ids) | 3)
VLLM_QWEN3_DRAFTER_FROM = "0.24.0"  # qwen3_eagle3.Eagle3Qwen3ForCausalLM (§4.1 "Q")
VLLM_AUTO_WEIGHTS_LOADER_MODEL_FROM = "0.25.0"  # inner load_weights -> AutoWeightsLoader: unknown names raise (MLA too)
VLLM_D2T_ONLY_WHEN_VOCAB_DIFFERS_FROM = "0.30.0"  # draft_id_to_target_id exists only when draft vocab != target vocab
VLLM_DRAFT_VOCAB_DEFAULT_FROM = "0.11.0"  # draft_vocab_size defaults to vocab_size (getattr); before: required
# §4.2 "Config fields read": first release whose Llama drafter reads the key.
VLLM_LLAMA_DRAFTER_KEYS_FROM = {
    "norm_before_residual": "0.10.1", "attention_bias": "0.16.0", "norm_before_fc": "0.18.0",
    "num_aux_hidden_states": "0.22.0", "fc_norm": "0.22.0", "norm_output": "0.22.0",
}
VLLM_LLAMA_DRAFTER_NESTED_KEYS_FROM = {"use_aux_hidden_state": "0.12.0", "norm_before_fc": "0.22.0",
                                       "eagle_aux_hidden_state_layer_ids": "0.22.0"}
# §5.1 / §5.3: EAGLEConfig keeps names that start with Eagle3 (0.10.0), or start or end with it (0.10.1+).
VLLM_EAGLE3_SUFFIX_KEPT_FROM = "0.10.1"
# §5.3: drafter model_types hf_config_override rewrites to deepseek_mtp (first release).
VLLM_MTP_REWRITES_FROM = {"deepseek_v3": "0.10.0", "deepseek_v32": "0.11.0", "glm_moe_dsa": "0.16.0",
                          "deepseek_v4": "0.20.0", "deepseek_v41": "0.30.0"}
VLLM_KIMI_K3_MTP_FROM = "0.27.0"  # kimi_k3 -> kimi_k3_mtp
VLLM_NEVER_REWRITTEN = ("kimi_k2", "deepseek_v2", "llama", "qwen3")
# §5.1 step 4: "eagle3-" in the path ran as EAGLE-1 before 0.10.2; from 0.10.2 "eagle3" anywhere -> eagle3.
VLLM_EAGLE3_PATH_DETECTED_FROM = "0.10.2"
VLLM_METHOD_NONE_PRESET_FROM = "0.17.0"  # method None is first set to "draft_model" (or "ngram")
# 0.34.0: a method None with a draft checkpoint stays None; the speculator-config registry detects it
# (vllm/v1/worker/gpu/spec_decode/speculator_config.py, each config class's `matches`).
VLLM_METHOD_DETECTED_BY_REGISTRY_FROM = "0.34.0"

# sglang-eagle3.md §3.2, §3.3, §3.5, §5.1 and checkpoint-formats.md §3.2.
SGLANG_MODEL_PREFIX_ACCEPTED_FROM = "0.4.9"  # param_name = name if name in params_dict else f"model.{name}"
SGLANG_LAYERS_0_AND_MULTI_LAYER_FROM = "0.5.12"  # legacy_name_map midlayer -> layers.0; N layers
SGLANG_FC_FROM_AUX_COUNT_FROM = "0.5.12"
SGLANG_LLAMA_DRAFTER_KEYS_FROM = {"bias": "0.4.9", "fc_norm": "0.5.12", "use_aux_norm": "0.5.12", "norm_output": "0.5.12",
                                  "num_aux_hidden_states": "0.5.12", "norm_before_fc": "0.5.17"}
SGLANG_MLA_DRAFTER_KEYS_FROM = {"fc_norm": "0.5.13", "use_aux_norm": "0.5.13", "norm_output": "0.5.13"}
# §5.1: draft architectures ModelConfig rewrites to NextN. The notes say 0.4.7 for DeepseekV3ForCausalLM;
# the code has it from 0.4.6.post2 (sglang/srt/configs/model_config.py:93 there): the code wins.
SGLANG_NEXTN_REWRITES = {  # architecture -> [(first release, rewritten to)]
    "DeepseekV3ForCausalLM": [("0.4.6.post2", "DeepseekV3ForCausalLMNextN")],
    "DeepseekV32ForCausalLM": [("0.5.12", "DeepseekV3ForCausalLMNextN")],
    "GlmMoeDsaForCausalLM": [("0.5.9", "DeepseekV3ForCausalLMNextN"), ("0.5.16", "GlmMoeDsaForCausalLMNextN")],
}
SGLANG_NEVER_REWRITTEN = ("KimiK25ForConditionalGeneration", "LlamaForCausalLMEagle3", "Eagle3DeepseekV2ForCausalLM",
                          "LlamaForCausalLM")
