"""The Prometheus series an SGLang server (started with --enable-metrics) exposes for the traffic it serves:
generated tokens (a counter) and the requests running and queued (gauges), by the names this release uses.

`compat verify --server` reads them around its own requests (other traffic shows as tokens its requests do
not explain) and, with the verify-calls counter of spec_decode_metrics, the mean accepted length.

    {"present": true, "location": "file:line", "series": {"generation_tokens": {...}, "requests_running": {...},
     "requests_waiting": {...}}}
"""

from __future__ import annotations

from compat.probes import probe
from compat.probes._metrics import declarations
from compat.probes.sglang._metrics_home import collector_files
from compat.core.tree import EngineTree

# role -> (the tail of the name that says what it counts, the kind it must be)
ROLES = {"generation_tokens": ("generation_tokens", "counter"), "requests_running": ("num_running_reqs", "gauge"),
         "requests_waiting": ("num_queue_reqs", "gauge")}


@probe("sglang", "request_metrics", "Request and token series on /metrics (other-traffic detection)", order=81)
def request_metrics(tree: EngineTree) -> dict:
    series: dict[str, dict] = {}
    for relpath in collector_files(tree, b'"sglang:generation_tokens'):
        for decl in declarations(tree, relpath, "sglang:"):
            for role, (tail, kind) in ROLES.items():
                if role not in series and decl.kind == kind and decl.name.removesuffix("_total").endswith(tail):
                    series[role] = decl.to_json(tree)
        if "generation_tokens" in series:
            return {"present": True, "location": series["generation_tokens"]["location"], "series": series}
    return {"present": False, "reason": "no generation-tokens counter is declared under sglang/srt/"}
