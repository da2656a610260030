"""The Prometheus series a vLLM server exposes for the traffic it serves: generated tokens (a counter) and
the requests running and waiting (gauges), by the names this release uses.

`compat verify --server` reads them around its own requests: generated tokens that moved more than its
requests explain, or requests already running when it started, mean other traffic shares the counters.
Read from the stat logger that declares them (vllm/v1/metrics/loggers.py in 0.10-0.33, found by the prefix
wherever it lives); a series' role is what its name says it counts.

    {"present": true, "location": "file:line", "series": {"generation_tokens": {"name", "kind", "sample",
     "location"}, "requests_running": {...}, "requests_waiting": {...}}}
"""

from __future__ import annotations

from compat.probes import probe
from compat.probes._metrics import declarations
from compat.core.tree import EngineTree

HOME = "vllm/v1/metrics/loggers.py"
# role -> (the tail of the name that says what it counts, the kind it must be)
ROLES = {"generation_tokens": ("generation_tokens", "counter"), "requests_running": ("num_requests_running", "gauge"),
         "requests_waiting": ("num_requests_waiting", "gauge")}


def _candidates(tree: EngineTree):
    """The usual home first; the byte grep over the package only when it does not declare them."""
    if tree.exists(HOME):
        yield HOME
    yield from (f for f in tree.grep(b"vllm:generation_tokens", under="vllm") if f != HOME)


@probe("vllm", "request_metrics", "Request and token series on /metrics (other-traffic detection)", order=81)
def request_metrics(tree: EngineTree) -> dict:
    for relpath in _candidates(tree):
        series = {}
        for decl in declarations(tree, relpath, "vllm:"):
            for role, (tail, kind) in ROLES.items():
                if role not in series and decl.kind == kind and decl.name.removesuffix("_total").endswith(tail):
                    series[role] = decl.to_json(tree)
        if "generation_tokens" in series:
            return {"present": True, "location": series["generation_tokens"]["location"], "series": series}
    return {"present": False, "reason": "no generation-tokens counter is declared under vllm/"}
