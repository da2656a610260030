"""verify --server on the SGLang path. SGLang cannot run on this machine, so the server is modelled
(tests/verify/modelled_engine.py): its paths, keys and metric names are those compat's probes read from the real
releases below (fetched into the cache like `compat probe --engine sglang==X`), its behaviour is the test's.

Modelled here, not measured: SGLang's text, timing and counter arithmetic (verify calls = completion tokens /
the mean accepted length the test sets). Read from each release's source: /server_info vs /get_server_info,
internal states as a list or merged (0.4.4), the `avg_spec_accept_length` key, the speculative server-argument
names, `sglang:generation_tokens_total`, and `sglang:spec_verify_calls_total` where the release has it (0.5.13+).
"""

from __future__ import annotations

import pytest

from compat.report import build_report
from compat.verify.server import ServerRun, builtin, verify_server
from modelled_engine import Behaviour, ModelledEngine

pytestmark = pytest.mark.network

WITH_VERIFY_COUNTER, LIST_STATES, MERGED_STATES = "0.5.23", "0.5.2", "0.4.4"


@pytest.fixture(scope="module")
def reports(pinned_release) -> dict[str, dict]:
    return {v: build_report(pinned_release("sglang", v)) for v in (WITH_VERIFY_COUNTER, LIST_STATES, MERGED_STATES)}


def run(engine: ModelledEngine, **options) -> dict:
    with engine.serve() as server:
        return verify_server(ServerRun(server.url, builtin().take(options.pop("n", 6)), max_tokens=40, concurrency=3,
                                       **options))


def test_the_probe_reads_what_differs_between_these_releases(reports):
    new, old, oldest = (reports[v] for v in (WITH_VERIFY_COUNTER, LIST_STATES, MERGED_STATES))
    assert "verify_calls" in new["spec_decode_metrics"]["series"] and "verify_calls" not in old["spec_decode_metrics"]["series"]
    assert new["server_info"]["preferred_path"] == "/server_info" and old["server_info"]["preferred_path"] == "/get_server_info"
    assert old["server_info"]["internal_states"] == "list" and oldest["server_info"]["internal_states"] == "merged"
    for report in (new, old, oldest):
        assert report["server_info"]["accept_length_key"] == "avg_spec_accept_length"
        assert report["request_metrics"]["series"]["generation_tokens"]["sample"] == "sglang:generation_tokens_total"


def test_counters_give_the_mean_accepted_length_of_verifys_requests(reports):
    d = run(ModelledEngine(reports[WITH_VERIFY_COUNTER], Behaviour(mean_accepted_length=2.5)))
    server = d["server"]
    assert (server["engine"], server["version"], server["method"], server["num_speculative_tokens"]) == \
        ("sglang", WITH_VERIFY_COUNTER, "EAGLE3", 3)
    assert server["draft_model"] == "/models/eagle3-drafter" and server["speculating"] is True
    assert server["detected_from"]["version"] == "GET /server_info: version"
    assert server["names_from"]["release"] == WITH_VERIFY_COUNTER
    acc = d["acceptance"]
    assert acc["mean_accepted_length"] == pytest.approx(240 / (6 * 16), rel=1e-3)  # 40 tokens = 16 verify calls each
    assert acc["per_position"] == [] and "sglang:spec_verify_calls_total" in acc["source"]
    assert acc["scope"] == "verify's requests" and d["traffic"]["other_traffic"] is False
    assert d["verdict"] == "healthy" and d["passed"] and "no per-position counters" in d["why"]


def test_an_eagle_run_of_an_eagle3_drafter_collapses_to_one_token_per_step(reports):
    d = run(ModelledEngine(reports[WITH_VERIFY_COUNTER], Behaviour(mean_accepted_length=1.0)))
    assert d["acceptance"]["mean_accepted_length"] == pytest.approx(1.0)
    assert d["verdict"] == "collapsed" and d["diagnosis"]["pattern"] == "uniform-near-zero"
    assert d["next"].startswith("compat doctor --engine sglang==0.5.23 --launch ")
    assert "--speculative-draft-model-path /models/eagle3-drafter" in d["next"]


def test_without_metrics_the_server_infos_average_is_verifys_when_it_started_empty(reports):
    d = run(ModelledEngine(reports[WITH_VERIFY_COUNTER], Behaviour(metrics=False, mean_accepted_length=2.5)))
    acc = d["acceptance"]
    assert acc["mean_accepted_length"] == pytest.approx(2.5) and acc["scope"] == "verify's requests"
    assert "none before verify's requests" in acc["source"]
    assert any("--enable-metrics" in n for n in acc["notes"])
    assert d["traffic"]["other_traffic"] is None  # no counter: cannot tell


def test_a_server_that_speculated_before_gives_a_cumulative_average_and_says_so(reports):
    engine = ModelledEngine(reports[LIST_STATES], Behaviour(mean_accepted_length=2.0))
    engine.cum_accept = (3000.0, 1000.0)  # 3.0 per step since the server started
    d = run(engine)
    acc = d["acceptance"]
    assert acc["scope"].startswith("since the server started")
    assert 2.0 < acc["mean_accepted_length"] < 3.0
    assert any("not verify's alone" in n for n in acc["notes"])


def test_the_merged_internal_state_of_the_oldest_releases(reports):
    d = run(ModelledEngine(reports[MERGED_STATES], Behaviour(mean_accepted_length=2.2)))
    assert d["server"]["detected_from"]["server_info"] == "GET /get_server_info"
    assert d["acceptance"]["mean_accepted_length"] == pytest.approx(2.2, rel=0.05)
    assert d["verdict"] == "healthy"


def test_no_speculation_is_a_verdict_not_a_number(reports):
    d = run(ModelledEngine(reports[WITH_VERIFY_COUNTER], Behaviour(speculating=False)))
    assert d["server"]["speculating"] is False and d["verdict"] == "no-speculation"
    assert d["acceptance"]["rate"] is None and d["acceptance"]["mean_accepted_length"] is None
    assert not d["passed"]


def test_other_traffic_is_said(reports):
    d = run(ModelledEngine(reports[WITH_VERIFY_COUNTER], Behaviour(other_tokens_per_request=100)))
    assert d["traffic"]["other_traffic"] is True and "verify's requests report 240" in d["traffic"]["detail"]
    assert "other traffic" in d["acceptance"]["scope"]
