"""Where SGLang declares its Prometheus metrics (a helper module, not a probe: its name starts with `_`)."""

from __future__ import annotations

from compat.core.tree import EngineTree

# The collector's homes: up to 0.5.9, and from 0.5.10. A byte grep over sglang/srt finds it anywhere else.
HOMES = ("sglang/srt/metrics/collector.py", "sglang/srt/observability/metrics_collector.py")


def collector_files(tree: EngineTree, needle: bytes) -> list[str]:
    """The usual homes that mention `needle`; only when none does, every file below sglang/srt that does."""
    found = [home for home in HOMES if tree.exists(home) and needle in tree.read_bytes(home)]
    return found or tree.grep(needle, under="sglang/srt")
