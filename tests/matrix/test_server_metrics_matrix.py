"""Every release: the names verify --server reads, as the probes find them in the real sources.

Independent facts checked (read by hand in the releases, see /work/shared/research/README.md "vLLM server
counters"): vLLM declares the four spec-decode counters in vllm/v1/spec_decode/metrics.py under `vllm:spec_decode_*`
with a `position` label on the per-position one, registered only with speculation, in every release from 0.10.0;
`/server_info` needs VLLM_SERVER_DEV_MODE and answers JSON from 0.11.0. SGLang has `sglang:spec_accept_length`
since 0.4.4, `sglang:spec_verify_calls_total` from 0.5.13, `/get_server_info` always,
`/server_info` from 0.5.6, and `avg_spec_accept_length` in the scheduler's internal state.
"""

import pytest
from packaging.version import Version

pytestmark = [pytest.mark.matrix, pytest.mark.network]

SGLANG_VERIFY_CALLS_FROM = "0.5.13"  # grep of every cached release: first declared in 0.5.13's metrics_collector.py
VLLM_ROLES = {"num_drafts", "num_draft_tokens", "num_accepted_tokens", "num_accepted_tokens_per_pos"}


def _located(fact: dict) -> bool:
    path, _, number = fact["location"].rpartition(":")
    return path.endswith(".py") and number.isdigit()


def test_vllm_spec_decode_counters(vllm_report, vllm_version):
    fact = vllm_report["spec_decode_metrics"]
    assert fact["present"] and set(fact["counters"]) == VLLM_ROLES
    for role, counter in fact["counters"].items():
        assert counter["name"] == f"vllm:spec_decode_{role}" and counter["sample"] == counter["name"] + "_total"
        assert counter["kind"] == "counter" and counter["location"].startswith("vllm/v1/spec_decode/metrics.py:")
    assert fact["position_label"] == "position"
    assert fact["registered_only_when_speculating"]["test"] == "not self.spec_decoding_enabled"
    traffic = vllm_report["request_metrics"]["series"]
    assert traffic["generation_tokens"]["sample"] == "vllm:generation_tokens_total" and _located(traffic["generation_tokens"])
    assert traffic["requests_running"]["sample"] == "vllm:num_requests_running"


def test_vllm_server_info_endpoint(vllm_report, vllm_version):
    fact = vllm_report["server_info_endpoint"]
    assert fact["present"] and fact["path"] == "/server_info" and fact["config_key"] == "vllm_config"
    assert fact["enabled_by"] == "VLLM_SERVER_DEV_MODE" and fact["enabled_by_location"]
    assert fact["json_format"] == (Version(vllm_version) >= Version("0.11.0"))


def test_sglang_spec_metrics_and_server_info(sglang_report, sglang_version):
    spec = sglang_report["spec_decode_metrics"]
    assert spec["present"] and spec["series"]["accept_length"]["sample"] == "sglang:spec_accept_length"
    assert spec["series"]["accept_length"]["kind"] == "gauge" and _located(spec["series"]["accept_length"])
    has_counter = Version(sglang_version) >= Version(SGLANG_VERIFY_CALLS_FROM)
    assert ("verify_calls" in spec["series"]) == has_counter
    if has_counter:
        assert spec["series"]["verify_calls"]["sample"] == "sglang:spec_verify_calls_total"
    assert sglang_report["request_metrics"]["series"]["generation_tokens"]["sample"] == "sglang:generation_tokens_total"
    info = sglang_report["server_info"]
    paths = {p["path"] for p in info["paths"]}
    assert "/get_server_info" in paths and (("/server_info" in paths) == (Version(sglang_version) >= Version("0.5.6")))
    assert info["accept_length_key"] == "avg_spec_accept_length" and info["version_key"] == "version"
    assert info["internal_states"] in ("list", "merged") and info["server_args"] == "spread"
