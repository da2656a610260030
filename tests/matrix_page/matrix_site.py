"""What the matrix page tests build (conftest.py's `site`): both engines over a modest range, four families."""

RANGES = {"vllm": ">=0.33.0,<0.35", "sglang": ">=0.5.22,<0.5.24"}
FAMILIES = ("llama", "kimi-k2", "gpt-oss", "glm4-moe")
