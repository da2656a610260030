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
