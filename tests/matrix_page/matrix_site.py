"""What the matrix page tests build (conftest.py's `site`): both engines over a modest range, four families."""

# closed ranges of pinned releases (tests/releases.json): a release published upstream later joins none of them
RANGES = {"vllm": ">=0.33.0,<=0.34.0", "sglang": ">=0.5.22,<=0.5.23"}
FAMILIES = ("llama", "kimi-k2", "gpt-oss", "glm4-moe")
