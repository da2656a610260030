"""The Prometheus series an SGLang server (started with --enable-metrics) exposes for speculative decoding,
by the names this release uses: the acceptance-length and acceptance-rate gauges (the most recent logging
window) and, from 0.5.13, the verify-calls counter that with the generated-tokens counter gives the mean
accepted length over any interval (SGLang's own per-request definition: completion tokens / verify calls).

Read from the metrics collector that declares them (sglang/srt/metrics/collector.py, later
sglang/srt/observability/metrics_collector.py; found by the prefix wherever it lives); a series' role is what
its name says it counts.

    {"present": true, "location": "file:line", "series": {"accept_length": {"name", "kind", "sample",
     "location"}, "accept_rate": {...} | absent, "verify_calls": {...} | absent}}
"""

from __future__ import annotations

from compat.probes import probe
from compat.probes._metrics import declarations
from compat.probes.sglang._metrics_home import collector_files
from compat.core.tree import EngineTree

PREFIX = "sglang:spec"
# role -> (the tail of the name that says what it counts, the kind it must be)
ROLES = {"accept_length": ("spec_accept_length", "gauge"), "accept_rate": ("spec_accept_rate", "gauge"),
         "verify_calls": ("spec_verify_calls", "counter")}


@probe("sglang", "spec_decode_metrics", "Speculative-decoding series on /metrics (what verify --server reads)", order=80)
def spec_decode_metrics(tree: EngineTree) -> dict:
    series: dict[str, dict] = {}
    for relpath in collector_files(tree, f'"{PREFIX}'.encode()):
        for decl in declarations(tree, relpath, PREFIX):
            for role, (tail, kind) in ROLES.items():
                if role not in series and decl.kind == kind and decl.name.removesuffix("_total").endswith(tail):
                    series[role] = decl.to_json(tree)
    if not series:
        return {"present": False, "reason": f"no metric named {PREFIX}* is declared under sglang/srt/"}
    first = min(series.values(), key=lambda s: s["location"])
    return {"present": True, "location": first["location"], "series": series}
