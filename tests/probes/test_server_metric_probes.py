"""The probes verify --server reads names with (vLLM: spec_decode_metrics, request_metrics, server_info_endpoint;
SGLang: spec_decode_metrics, request_metrics, server_info), on small trees written in the shapes the releases
use and in shapes they may take next: a renamed prefix, a moved class, names declared through a list of tuples,
a route gated in another module. Every fact carries its file and line."""

from __future__ import annotations

from compat.probes.sglang.request_metrics import request_metrics as sglang_request_metrics
from compat.probes.sglang.server_info import server_info
from compat.probes.sglang.spec_decode_metrics import spec_decode_metrics as sglang_spec_metrics
from compat.probes.vllm.request_metrics import request_metrics
from compat.probes.vllm.server_info_endpoint import server_info_endpoint
from compat.probes.vllm.spec_decode_metrics import spec_decode_metrics
from probe_trees import line, write_tree

SPEC_TUPLES = """
from dataclasses import dataclass
import prometheus_client


@dataclass
class SpecDecodingStats:
    num_spec_tokens: int
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_accepted_tokens_per_pos: list = None


class SpecDecodingProm:
    _counter_cls = prometheus_client.Counter

    def __init__(self, speculative_config, labelnames, per_engine_labelvalues, is_diffusion=False):
        self.spec_decoding_enabled = speculative_config is not None or is_diffusion
        if not self.spec_decoding_enabled:
            return
        if is_diffusion:
            counter_specs = [("vllm:diffusion_num_denoising_steps", "Steps.")]
        else:
            counter_specs = [
                ("vllm:spec_decode_num_drafts", "Number of spec decoding drafts."),
                ("vllm:spec_decode_num_draft_tokens", "Number of draft tokens."),
                ("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens."),
            ]
        counters = [self._counter_cls(name=name, documentation=doc, labelnames=labelnames) for name, doc in counter_specs]
        pos_labelnames = labelnames + ["position"]
        base_counter = self._counter_cls(
            name="vllm:spec_decode_num_accepted_tokens_per_pos",
            documentation="Accepted tokens per draft position.",
            labelnames=pos_labelnames,
        )
"""


def test_vllm_counters_declared_through_a_list_of_tuples(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/v1/spec_decode/metrics.py": SPEC_TUPLES}, strip_first_newline=True)
    fact = spec_decode_metrics(tree)
    assert fact["present"] and fact["class"] == "SpecDecodingProm" and fact["stats_class"] == "SpecDecodingStats"
    counters = fact["counters"]
    assert set(counters) == {"num_drafts", "num_draft_tokens", "num_accepted_tokens", "num_accepted_tokens_per_pos"}
    assert counters["num_drafts"]["sample"] == "vllm:spec_decode_num_drafts_total"
    assert counters["num_drafts"]["location"] == f"vllm/v1/spec_decode/metrics.py:{line(SPEC_TUPLES, 'spec_decode_num_drafts')}"
    assert counters["num_accepted_tokens_per_pos"]["labels"] == ["position"] and fact["position_label"] == "position"
    guard = fact["registered_only_when_speculating"]
    assert guard["test"] == "not self.spec_decoding_enabled"
    assert guard["location"].endswith(f":{line(SPEC_TUPLES, 'if not self.spec_decoding_enabled')}")


def test_vllm_renamed_prefix_and_moved_file_are_still_read_by_what_each_counts(tmp_path):
    moved = SPEC_TUPLES.replace("vllm:spec_decode_", "vllm:spec_decode_v2_")
    tree = write_tree(tmp_path, "vllm", {"vllm/v2/speculative/prometheus.py": moved})
    fact = spec_decode_metrics(tree)
    assert fact["present"] and fact["counters"]["num_draft_tokens"]["name"] == "vllm:spec_decode_v2_num_draft_tokens"
    assert fact["counters"]["num_drafts"]["location"].startswith("vllm/v2/speculative/prometheus.py:")


def test_vllm_without_spec_counters_says_absent(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/v1/metrics/loggers.py": "X = 1\n"})
    assert spec_decode_metrics(tree)["present"] is False
    assert request_metrics(tree)["present"] is False
    assert server_info_endpoint(tree)["present"] is False


LOGGERS = """
class PrometheusStatLogger:
    _gauge_cls = Gauge
    _counter_cls = Counter

    def __init__(self, labelnames):
        gauge_scheduler_running = self._gauge_cls(name="vllm:num_requests_running", documentation="x", labelnames=labelnames)
        gauge_scheduler_waiting = self._gauge_cls(name="vllm:num_requests_waiting", documentation="x", labelnames=labelnames)
        counter_generation_tokens = self._counter_cls(name="vllm:generation_tokens", documentation="x", labelnames=labelnames)
        histogram = self._histogram_cls(name="vllm:generation_tokens_per_step", documentation="not a counter")
"""


def test_vllm_request_metrics_by_role_and_kind(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/v1/metrics/loggers.py": LOGGERS})
    series = request_metrics(tree)["series"]
    assert series["generation_tokens"]["sample"] == "vllm:generation_tokens_total"
    assert series["requests_running"]["kind"] == "gauge" and series["requests_waiting"]["sample"] == "vllm:num_requests_waiting"


ROUTE = """
from fastapi import APIRouter, Query
router = APIRouter()


@router.get("/server_info")
async def show_server_info(raw_request, config_format: str = "text"):
    server_info = {"vllm_config": str(raw_request.app.state.vllm_config), "vllm_env": {}}
    return server_info


def attach_router(app):
    app.include_router(router)
"""
GATE = """
import vllm.envs as envs


def register_dev_routers(app):
    from .dev.server_info.api_router import attach_router as attach_server_info_router
    attach_server_info_router(app)


def build_app(app):
    if envs.VLLM_SERVER_DEV_MODE:
        register_dev_routers(app)
"""


def test_vllm_server_info_gated_in_another_module(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/entrypoints/serve/dev/server_info/api_router.py": ROUTE,
                                         "vllm/entrypoints/serve/__init__.py": GATE}, strip_first_newline=True)
    fact = server_info_endpoint(tree)
    assert fact["present"] and fact["json_format"] is True and fact["config_key"] == "vllm_config"
    assert fact["enabled_by"] == "VLLM_SERVER_DEV_MODE"
    assert fact["enabled_by_location"] == f"vllm/entrypoints/serve/__init__.py:{line(GATE, 'if envs.VLLM_SERVER_DEV_MODE')}"


COLLECTOR = """
class SchedulerMetricsCollector:
    def __init__(self, labels):
        from prometheus_client import Counter, Gauge
        self.num_running_reqs = Gauge(name="sglang:num_running_reqs", documentation="x", labelnames=labels.keys())
        self.num_queue_reqs = Gauge(name="sglang:num_queue_reqs", documentation="x", labelnames=labels.keys())
        self.spec_accept_length = Gauge(name="sglang:spec_accept_length", documentation="x", labelnames=labels.keys())
        self.spec_accept_rate = Gauge(name="sglang:spec_accept_rate", documentation="x", labelnames=labels.keys())
        self.generation_tokens_total = Counter(name="sglang:generation_tokens_total", documentation="x")
        self.spec_verify_calls_total = Counter(name="sglang:spec_verify_calls_total", documentation="x")
"""
HTTP = """
@app.get("/get_server_info")
async def get_server_info():
    return await server_info()


@app.get("/server_info")
async def server_info():
    internal_states = await _global_state.tokenizer_manager.get_internal_state()
    return {
        **dataclasses.asdict(_global_state.tokenizer_manager.server_args),
        "internal_states": internal_states,
        "version": __version__,
    }
"""
STATE = """
class InternalState:
    def get_internal_state(self, recv_req):
        ret = {}
        if not self.spec_algorithm.is_none() and self.cum_spec_accept_count > 0:
            ret["avg_spec_accept_length"] = self.cum_spec_accept_length / self.cum_spec_accept_count
        return ret
"""
META = """
def handle(meta_info, recv_obj, i):
    meta_info["spec_accept_length"] = recv_obj.completion_tokens[i] / recv_obj.spec_verify_ct[i]
"""


def test_sglang_metric_roles_from_a_moved_collector(tmp_path):
    tree = write_tree(tmp_path, "sglang", {"sglang/srt/observability/metrics_collector.py": COLLECTOR})
    spec = sglang_spec_metrics(tree)["series"]
    assert set(spec) == {"accept_length", "accept_rate", "verify_calls"}
    assert spec["verify_calls"]["sample"] == "sglang:spec_verify_calls_total" and spec["accept_length"]["kind"] == "gauge"
    traffic = sglang_request_metrics(tree)["series"]
    assert traffic["generation_tokens"]["sample"] == "sglang:generation_tokens_total"
    assert traffic["requests_waiting"]["sample"] == "sglang:num_queue_reqs"


def test_sglang_server_info_prefers_the_answering_route_and_the_scheduler_state_over_meta_info(tmp_path):
    tree = write_tree(tmp_path, "sglang", {"sglang/srt/entrypoints/http_server.py": HTTP,
                                           "sglang/srt/managers/tokenizer_manager.py": META,
                                           "sglang/srt/managers/scheduler_components/internal_state.py": STATE},
                      strip_first_newline=True)
    fact = server_info(tree)
    assert [p["path"] for p in fact["paths"]] == ["/get_server_info", "/server_info"]
    assert fact["preferred_path"] == "/server_info" and fact["internal_states"] == "list" and fact["version_key"] == "version"
    assert fact["server_args"] == "spread" and fact["accept_length_key"] == "avg_spec_accept_length"
    assert fact["accept_length_location"] == ("sglang/srt/managers/scheduler_components/internal_state.py:"
                                              f"{line(STATE, 'avg_spec_accept_length')}")
