"""SGLang (github.com/sgl-project/sglang): what compat knows of it that its source does not say at run time."""

from compat.known_issues import DEEPSEEK_FAMILY

NAME = "sglang"
DISPLAY_NAME = "SGLang"
IMPORT_NAME = "sglang"
ORDER = 20
DISTRIBUTIONS = ("sglang",)  # sglang-router is another package (sglang_router), not the engine
INDEX_NAME = "sglang"
VERSION_FILES = ("sglang/version.py", "sglang/_version.py")

# the package sits under python/ in the repository; releases are tagged with their own version: v0.5.8, v0.4.6.post4
REPOSITORY = "https://github.com/sgl-project/sglang"
SOURCE_PREFIX = "python/"
TAG = "v{version}"

LAUNCH_COMMANDS = ()
LAUNCH_MODULES = ("sglang.launch_server",)
MODEL_OPTION = "--model-path"
# The launch grammar (compat/launch_line.py): one --speculative-* flag per setting; argparse takes a unique prefix of
# each option doctor reads (allow_abbrev)
TARGET_OPTIONS = ("--model-path", "--model")
DRAFTER_OPTIONS = ("--speculative-draft-model-path", "--speculative-draft-model")
OPTION_ALIASES = {"--speculative-draft-model": "--speculative-draft-model-path", "--model": "--model-path"}
# the tree: --speculative-num-steps draft steps of --speculative-eagle-topk each, --speculative-num-draft-tokens verified
SPEC_SETTING_OPTIONS = {"method": "--speculative-algorithm", "num_speculative_tokens": "--speculative-num-steps",
                        "topk": "--speculative-eagle-topk", "num_draft_tokens": "--speculative-num-draft-tokens"}
SPEC_OPTION_PREFIX = "--speculative-"
ABBREVIATED_OPTIONS = (*TARGET_OPTIONS, *DRAFTER_OPTIONS, "--speculative-algorithm", "--speculative-num-steps",
                       "--speculative-eagle-topk", "--speculative-num-draft-tokens")
# the draft's own --speculative-draft-* options (where the release has them), else the target's it inherits
DRAFT_OPTIONS = {"attention_backend": ("--speculative-draft-attention-backend", "--attention-backend",
                                       "--decode-attention-backend"),
                 "quantization": ("--speculative-draft-model-quantization", "--quantization"),
                 "kv_cache_dtype": ("--speculative-draft-kv-cache-dtype", "--kv-cache-dtype"),
                 "tensor_parallel_size": ("", "--tp-size", "--tensor-parallel-size")}
LAUNCH_EXAMPLE = ("python -m sglang.launch_server --model-path ./target --speculative-algorithm EAGLE3 "
                  "--speculative-draft-model-path ./drafter --speculative-num-steps 3")
SPEC_FORM = "flags"  # --speculative-algorithm, --speculative-draft-model-path, --speculative-num-steps, ...
DRAFT_SETTINGS_FROM = "target"  # the draft worker is built from the target's ServerArgs (sglang#23490)
DRAFT_SHAPE = "tree"  # --speculative-num-steps x --speculative-eagle-topk, --speculative-num-draft-tokens verified
TARGET_GATE = "capture_hook"  # set_eagle3_layers_to_capture, else AttributeError (no model-type whitelist)
MHA_ATTENTION_BACKENDS = ("flashinfer", "fa3", "triton")  # --attention-backend choices an MHA drafter runs on
LAYER_IDS_FED_BY = "target_hook"  # the target's set_eagle3_layers_to_capture (ids + 1: the output of layer k - 1)
# What its processes write before a line (groups as in vllm.py): the log head `[YYYY-MM-DD HH:MM:SS(.mmm) DP1 PP0 TP3
# EP3] ` (sglang/srt/utils/common.py:1265 `configure_logger`, 0.5.12; :1169 in 0.5.8) with the scheduler's ranks
# (sglang/srt/managers/scheduler.py:3951-3963 in 0.5.12: DP, PP, ATTN_CP, MOE_DP, TP, EP; :2897-2903 in 0.5.8), none for
# the detokenizer and the main process (detokenizer_manager.py:426); a record's further lines are bare, so a traceback
# logged as `Scheduler hit an exception: {traceback}` (scheduler.py:4045) follows its header on the first line only;
# and torch.distributed's `[rank0]: ` (as in vllm.py). The same head in 0.4.4 (sglang/srt/utils.py:654, ` TP0`,
# ` DP0 TP0`: scheduler.py:1690-1692) through 0.5.23 (utils/common.py:2630, scheduler.py:6280-6291), where the encoder
# server of disaggregated serving adds ` encode_server` and ` encode_dp_worker[0]`
# (disaggregation/encoder/http_server.py:211, runtime.py:1724); `.mmm` when SGLANG_LOG_MS is set.
LOG_PREFIXES = (r"(?P<head>\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?"
                r"(?P<who>(?: (?:[A-Z][A-Z_]*\d+|[a-z][a-z_]*(?:\[\d+\])?))*)\] ?)",
                r"\[(?P<who>rank\d+)\]: ?")
VERSION_IN_LOG = r"(?:sglang(?:==| version |-)|SGLang v)v?(\d+\.\d+\.\d+(?:\.post\d+)?)"

SERVER_OWNED_BY = "sglang"
SERVER_INFO_PATHS = ("/server_info", "/get_server_info")  # before 0.5.6: /get_server_info
SERVER_INFO_KEYS = ("internal_states", "speculative_algorithm")
METRICS_PATH = "/metrics"  # only with --enable-metrics
METRICS_PREFIX = "sglang:"
SERVER_ACCEPTANCE = "server_info"  # its server info's accept length (/metrics' verify counters only with --enable-metrics)
# what verify --server reads from the release's report (probes/sglang/spec_decode_metrics.py, request_metrics.py,
# server_info.py, server_args.py): its server info spreads the server arguments, the speculative_* ones among them
SERVER_SPEC_SERIES = "spec_decode_metrics.series"
SERVER_TRAFFIC_SERIES = "request_metrics.series"
SERVER_INFO_FACT = "server_info"
SERVER_SETTINGS_FACT = "server_args"
# its acceptance log line: the scheduler's decode line `... accept len: 2.31, accept rate: 0.44, ...`
# (sglang/srt/managers/scheduler_metrics_mixin.py:377 in 0.5.8), found among the release's log sites by this piece
LOG_ACCEPTANCE = r"accept len"
CONFIG_BUILD = "server_args"  # sglang.srt.server_args.prepare_server_args(argv)
# Known issues: what code cannot tell, curated by hand, each with its upstream link and version range (the fields and
# how doctor and explain match them: compat/known_issues.py, which reads every unit's)
KNOWN_ISSUES = (
    {
        "id": "sglang-deepseek-no-capture",
        "title": "DeepseekV2/V3ForCausalLM (Kimi-K2) has no set_eagle3_layers_to_capture: EAGLE3 dies with AttributeError",
        "versions": "<0.5.4.post2",
        "applies_to": DEEPSEEK_FAMILY,
        "link": "https://github.com/sgl-project/sglang/issues/6268",
        "fix": "SGLang >= 0.5.4.post2 (sglang#12319; first minor release 0.5.5)",
        "fixed_in": "0.5.4.post2",
        "checks": ("target-interface",),
    },
    {
        "id": "sglang-kimi-k25-no-capture",
        "title": "KimiK25ForConditionalGeneration lacks set_eagle3_layers_to_capture and get_embed_and_head",
        "versions": "<0.5.10",
        "applies_to": ("kimi_k25", "kimik25"),
        "link": "https://github.com/sgl-project/sglang/pull/19689",
        "fix": "SGLang >= 0.5.10",
        "fixed_in": "0.5.10",
        "checks": ("target-interface",),
    },
    {
        "id": "sglang-deepseek-conditional-offset",
        "title": "DeepSeek/Kimi targets add +1 to drafter layer ids only when the first id is 1; other id lists are "
                 "read as capture-before (two conventions in the wild)",
        "versions": ">=0.5.13",
        "applies_to": DEEPSEEK_FAMILY,
        "link": "https://github.com/sgl-project/sglang/pull/25454",
        "fix": "compat doctor's layer-id check says which layers this release feeds; convert with --engine-version if they differ",
        "fixed_in": None,
    },
    {
        "id": "sglang-draft-inherits-trtllm-mla",
        "title": "a Llama (MHA) EAGLE-3 drafter inherits the MLA target's trtllm_mla attention backend and fails at startup",
        "versions": ">=0.5.1",
        "applies_to": DEEPSEEK_FAMILY,
        "link": "https://github.com/sgl-project/sglang/issues/23490",
        "fix": "with --attention-backend trtllm_mla add --speculative-draft-attention-backend trtllm_mha (SGLang >= 0.5.7)",
        "fixed_in": None,
    },
    {
        "id": "sglang-eagle-flag-with-eagle3-drafter",
        "title": "--speculative-algorithm EAGLE with an EAGLE-3 drafter runs with accept length 1.00 and no warning",
        "versions": ">=0.4.4",
        "applies_to": ("*",),
        "link": "https://github.com/sgl-project/sglang/pull/21272",
        "fix": "pass --speculative-algorithm EAGLE3 (the launch command below does)",
        "fixed_in": None,
    },
)
PLUGIN_ENTRY_POINT = None  # no plugin entry point: compat's plugin loads through a .pth import hook

DEFAULT_RELEASES = ">=0.4.4"  # the range `compat matrix` covers: the releases with EAGLE-3 (as tools/failure_modes.py)

# docs.sglang.ai start/install (Docker): `lmsysorg/sglang:v<release>-cu<cuda>` (and -xeon, -rocm... builds);
# the image has no server entry point: a manifest gives `python3 -m sglang.launch_server ...` as its command.
IMAGE_REPOSITORIES = ("lmsysorg/sglang", "lmsysorg/sglang-rocm")
IMAGE_TAGS = (r"^v?(?P<version>\d+\.\d+\.\d+(?:\.\d+)?(?:\.post\d+)?(?:[.-]?rc\d+)?)(?:[-_+].*)?$",)
IMAGE_ENTRY = ()
IMAGE_DOCS = "https://docs.sglang.ai/get_started/install.html"

PROBES = "compat.probes.sglang"
PATCHES = "compat.patches.sglang"

# --- what the checks need and how it names the methods (issue 39) ---
from compat.method_name import Name  # noqa: E402  (the method names' type; the fields above need nothing)

# term of compat/fact_vocabulary.py -> the probe facts providing it; () where this unit's fields answer it
FACTS = {
    "layer ids": ("aux_layer_ids",), "eagle3 targets": ("eagle3_targets",), "target whitelist": ("eagle3_whitelist",),
    "target architectures": ("target_architectures",), "drafter loader": ("drafter_loader",),
    "drafter classes": ("eagle3_drafters",), "drafter renames": ("drafter_architecture_rename",),
    "draft dtype": ("draft_dtype",), "final layer capture": ("final_layer_capture",), "methods": ("methods",),
    "method packages": ("method_packages",), "release validation": ("spec_validation",),
    "launch options": ("cli_arguments",),  # one --speculative-* flag each, ServerArgs' fields
    "launch flags": ("cli_flags",),
    "method selection": ("cli_flags",),  # --speculative-algorithm's choices
    "draft attention": (),  # the target's unless an option of the draft says otherwise (DRAFT_SETTINGS_FROM)
    "draft quantization": ("draft_quantization",),
    "draft parallelism": (),  # the target's tensor parallelism (DRAFT_SETTINGS_FROM = "target")
    "speculative tree": ("speculative_tree_rules", "cli_arguments"),
    "speculators translation": ("speculators_format",),
    "block layer ids": ("block_targets",),  # set_dflash_layers_to_capture
    "method runners": (),  # one runner
    "method targets": ("target_architectures",),  # the capture hooks are read from the report; MTP by NextN class
    "weights check": (),  # its loaders do not refuse unloaded tensors
}

# method family (compat/methods) -> its names here (--speculative-algorithm), each with its version gate
METHOD_NAMES = {
    "dflash": (Name("DFLASH", since="0.5.11"),),
    "eagle3": (Name("EAGLE3", since="0.4.4.post2"),),
    "uno": (Name("UNO", since="0.5.20"),),
    "draft_model": (Name("STANDALONE", since="0.5.2"),),
    # EAGLE runs NEXTN (DeepSeek's MTP heads) through the same worker
    "eagle": (Name("EAGLE", serves=("mtp",), note="also runs MTP/NextN drafts (NEXTN is an alias of it)"),),
    "ngram": (Name("NGRAM", since="0.5.3"),),
    "dspark": (Name("DSPARK", since="0.5.16"),),
    # NEXTN: an alias of EAGLE in every release (a ServerArgs rewrite, a registered alias in 0.5.4.post2-0.5.7, a
    # reserved alias from 0.5.13); EAGLE/NEXTN promoted to FROZEN_KV_MTP for a Gemma4 assistant draft (0.5.12 on)
    "mtp": (Name("NEXTN", alias_of="EAGLE", serves=("eagle",), note="DeepSeek's NextN heads, run by the EAGLE worker"),
            Name("FROZEN_KV_MTP", since="0.5.12", note="a Gemma4 assistant draft; EAGLE/NEXTN are promoted to it")),
}
