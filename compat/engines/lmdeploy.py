"""LMDeploy (github.com/InternLM/lmdeploy): what compat knows of it that its source does not say at run time.

Speculative decoding is its PyTorch engine's (0.11.0+, InternLM/lmdeploy#3945); its TurboMind engine, the default
`--backend`, serves without the drafter (probes/lmdeploy/speculative_backend.py reads where). It needs CUDA: compat
reads its releases' Python source here and never runs it.
"""

NAME = "lmdeploy"
DISPLAY_NAME = "LMDeploy"
IMPORT_NAME = "lmdeploy"
ORDER = 30
DISTRIBUTIONS = ("lmdeploy",)  # one distribution; the CUDA 11/12.8 builds are GitHub-release wheels of the same name
INDEX_NAME = "lmdeploy"
# `__version__ = '0.18.0'` (lmdeploy/version.py). The index has platform wheels only (manylinux and win_amd64, no
# sdist); compat reads the smallest, win_amd64, whose .py files are the manylinux wheel's with CRLF line endings
# (compared member by member on 0.11.0: same lines, same numbers).
VERSION_FILES = ("lmdeploy/version.py",)

# the package sits at the top of the repository; releases are tagged v0.18.0
REPOSITORY = "https://github.com/InternLM/lmdeploy"
SOURCE_PREFIX = ""
TAG = "v{version}"

LAUNCH_COMMANDS = (("lmdeploy", "serve", "api_server"),)  # lmdeploy/cli/serve.py add_parser_api_server
LAUNCH_MODULES = ()
MODEL_OPTION = ""  # `lmdeploy serve api_server MODEL_PATH ...`: a positional argument
# The launch grammar (lmdeploy/cli/utils.py add_spec_group, 0.11.0+; :835-851 in 0.18.0): `--speculative-algorithm
# X --speculative-draft-model PATH --speculative-num-draft-tokens N`, where N is the draft tokens proposed per step
# (get_speculative_config passes it as SpeculativeConfig's num_speculative_tokens: cli/utils.py:100, 0.18.0), and
# 0.18.0's --speculative-dflash-block-size. Its parser is a FlexibleArgumentParser (cli/utils.py:734 in 0.11.0):
# underscores read as dashes, argparse's unique prefixes taken.
TARGET_OPTIONS = ()  # the target is the positional MODEL_PATH
DRAFTER_OPTIONS = ("--speculative-draft-model",)
OPTION_UNDERSCORES = True
SPEC_SETTING_OPTIONS = {"method": "--speculative-algorithm", "num_speculative_tokens": "--speculative-num-draft-tokens",
                        "dflash_block_size": "--speculative-dflash-block-size"}
SPEC_OPTION_PREFIX = "--speculative-"
ABBREVIATED_OPTIONS = (*DRAFTER_OPTIONS, "--speculative-algorithm", "--speculative-num-draft-tokens",
                       "--speculative-dflash-block-size")
LAUNCH_EXAMPLE = ("lmdeploy serve api_server ./target --backend pytorch --speculative-algorithm eagle3 "
                  "--speculative-draft-model ./drafter --speculative-num-draft-tokens 3")
SPEC_FORM = "flags"  # --speculative-algorithm, --speculative-draft-model, --speculative-num-draft-tokens (cli/utils.py)
# The draft's dtype, --model-format and hf overrides come from the target's engine config, with no draft option to
# change them; its parallelism is its own (tp 1) for eagle/eagle3, the target's for MTP, DFlash and the MLA drafter
# (lmdeploy/pytorch/engine/config_builder.py build_specdecode_config, 0.18.0)
DRAFT_SETTINGS_FROM = "target_engine_config"
DRAFT_SHAPE = "chain"  # num_speculative_tokens proposed one after another (no top-k tree)
# The target's config builder (lmdeploy/pytorch/configurations/*.py) sets aux_hidden_state_layers for eagle3 and the
# target class captures them; no whitelist, no interface (probes/lmdeploy/eagle3_targets.py, target_gates.py)
TARGET_GATE = "config_builder"
LAYER_IDS_FED_BY = "config_builder"  # the same builder's (2, n // 2, n - 3): the drafter's ids never reach the target
# What its processes write before a line: `%(asctime)s - %(name)s - %(levelname)s - %(filename)s:%(lineno)d - `
# (lmdeploy/utils.py _FORMAT: :109 in 0.11.0, :126 in 0.18.0), with `[pid=N ppid=N] - ` after the level when
# LMDEPLOY_LOG_PID is set (0.18.0 :130-132); the level wrapped in ANSI colours on a terminal (ColorFormatter).
LOG_PREFIXES = (r"(?P<head>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - (?P<who>[\w.]+) - (?:\x1b\[[0-9;]*m)?"
                r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|REQUEST)(?:\x1b\[[0-9;]*m)? - "
                r"(?:\[pid=\d+ ppid=\d+\] - )?(?P<file>[\w.-]+?\.py):(?P<line>\d+) - ?)",)
# `lmdeploy check_env` prints `LMDeploy: 0.18.0+<git hash>` (lmdeploy/cli/cli.py:116, 0.18.0); pip's lines name it too
VERSION_IN_LOG = r"(?:LMDeploy: |lmdeploy(?:==| version |-))v?(\d+\.\d+\.\d+(?:\.post\d+)?)"

SERVER_OWNED_BY = "lmdeploy"  # ModelCard.owned_by (lmdeploy/serve/openai/protocol.py)
METRICS_PATH = "/metrics"  # only with --enable-metrics (serve/openai/api_server.py mounts prometheus' app)
METRICS_PREFIX = "lmdeploy:"
# lmdeploy:spec_decode_num_drafts_total, ..._num_draft_tokens_total, ..._num_accepted_tokens_total and
# ..._num_accepted_tokens_per_pos_total (lmdeploy/metrics/loggers.py, 0.14.0+); before 0.14.0 only the log line
SERVER_ACCEPTANCE = "counters"
# no probe reads its /metrics series nor its server info yet: verify --server reads no release facts for it
SERVER_SPEC_SERIES = ""
SERVER_TRAFFIC_SERIES = ""
SERVER_INFO_FACT = ""
SERVER_SETTINGS_FACT = ""
# its acceptance log line: `SpecDecoding metrics: Draft acceptance rate: ...` (lmdeploy/metrics/loggers.py:90 in
# 0.11.0, :89 in 0.18.0), the words and order of vLLM's line; built into a string the logger prints later, so read
# where the release's error sites hold it as a log call's template (as before this field: vLLM's start)
LOG_ACCEPTANCE = r"^SpecDecoding metrics"
CONFIG_BUILD = ""  # no build of its configuration here: it needs CUDA (the preflight says so and does not run)
PLUGIN_ENTRY_POINT = None

DEFAULT_RELEASES = ">=0.11.0"  # the range `compat matrix` covers: the releases with speculative decoding

# Docker Hub openmmlab/lmdeploy, pushed by .github/workflows/docker.yml on a v*.*.* tag as `v<release>` (and
# `latest`); the CUDA builds add a suffix (`v0.12.2-cu12.8`, `v0.7.2-cu12`, `-cu11`), curated from deployments
# that name them. docker/Dockerfile has no ENTRYPOINT: a manifest gives `lmdeploy serve api_server ...` as its command.
IMAGE_REPOSITORIES = ("openmmlab/lmdeploy",)
IMAGE_TAGS = (r"^v?(?P<version>\d+\.\d+\.\d+(?:\.post\d+)?)(?:[-_+].*)?$",)
IMAGE_ENTRY = ()
IMAGE_DOCS = "https://lmdeploy.readthedocs.io/en/latest/get_started/installation.html"

PROBES = "compat.probes.lmdeploy"
PATCHES = None  # no compat patch for LMDeploy yet

# --- what the checks need and how it names the methods (issue 39) ---
from compat.method_name import Name  # noqa: E402  (the method names' type; the fields above need nothing)

# term of compat/fact_vocabulary.py -> the probe facts of probes/lmdeploy/ providing it. Left out (the checks needing
# them cannot tell yet): "draft attention", "draft quantization", "draft parallelism" (the draft takes the target's engine config: no check
# models it), "speculators translation" (no speculators format read), "block layer ids", "method targets",
# "weights check" (no probe reads them).
FACTS = {
    "layer ids": ("aux_layer_ids",), "eagle3 targets": ("eagle3_targets",), "target whitelist": ("eagle3_whitelist",),
    "target architectures": ("target_architectures",), "drafter loader": ("drafter_loader",),
    "drafter classes": ("eagle3_drafters",), "drafter renames": ("drafter_architecture_rename",),
    "draft dtype": ("draft_dtype",), "final layer capture": ("final_layer_capture",), "methods": ("methods",),
    "method packages": ("method_packages",),
    "release validation": ("spec_validation",),  # the CLI builder, SpeculativeConfig and the engine-side build, walked
    "launch options": ("cli_arguments",),  # lmdeploy/cli/utils.py's --speculative-* flags
    "launch flags": ("cli_flags", "speculative_backend"),  # and --backend pytorch: TurboMind drops the drafter
    "method selection": ("cli_flags",),  # --speculative-algorithm's choices
    "speculative tree": (),  # a chain (DRAFT_SHAPE): no tree rules
    "method runners": (),  # no runner to choose: the PyTorch engine's proposer per method (the `methods` fact's workers)
}

# method family (compat/methods) -> its names (--speculative-algorithm, the SPEC_PROPOSERS registry of
# lmdeploy/pytorch/spec_decode/proposers/), each from the first pinned release whose choices have it
METHOD_NAMES = {
    "eagle": (Name("eagle", since="0.11.0"),),
    "eagle3": (Name("eagle3", since="0.11.0"),),
    "mtp": (Name("deepseek_mtp", since="0.11.0"), Name("qwen3_5_mtp", since="0.12.3"), Name("hy3_mtp", since="0.16.0")),
    "dflash": (Name("dflash", since="0.18.0"),),
}
