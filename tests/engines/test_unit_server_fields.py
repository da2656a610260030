"""The engine unit's server fields decide what verify --server and explain read (issue 39): no engine-keyed
builder. Each test changes a unit's field on a copy and shows the reader follows it."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

from compat import engines
from compat.explain.metrics import is_metrics_site
from compat.explain.sites import Site
from compat.preflight import run_lines
from compat.verify.server.facts import release_facts

SERIES = {"sample": "x:spec_drafts_total", "kind": "counter", "location": "x/metrics.py:10"}
REPORT = {"spec_decode_metrics": {"present": True, "counters": {"num_drafts": SERIES}, "position_label": "position"},
          "my_series": {"present": True, "rows": {"num_drafts": SERIES}},
          "server_args": {"fields": [{"name": "speculative_algorithm"}, {"name": "tp_size"}]},
          "server_info_endpoint": {"present": True, "path": "/server_info"}}


def test_release_facts_read_where_the_unit_says():
    vllm = engines.get("vllm")
    facts = release_facts(vllm, REPORT, "0.32.0", "here", None)
    assert facts.engine == "vllm" and set(facts.spec) == {"num_drafts"} and facts.position_label == "position"
    assert facts.server_info["path"] == "/server_info" and facts.speculative_fields == ()
    moved = dataclasses.replace(vllm, name="other", server_spec_series="my_series.rows", server_info_fact="",
                                server_settings_fact="server_args")
    other = release_facts(moved, REPORT, "1.0", "here", None)
    assert other.engine == "other" and other.spec["num_drafts"].sample == "x:spec_drafts_total"
    assert other.server_info == {} and other.speculative_fields == ("speculative_algorithm",)
    none = release_facts(dataclasses.replace(vllm, server_spec_series="", server_traffic_series=""), REPORT, "1", "", None)
    assert none.spec == {} and none.traffic == {}


def _log(template: str) -> Site:
    return Site("log", None, "INFO", template, None, None, "x.py:1", None)


def test_the_acceptance_line_is_the_engines_own():
    sglang_line = _log("Decode batch. #running-req: {}, accept len: {}, accept rate: {}")
    vllm_line = _log("SpecDecoding metrics: Mean acceptance length: {}, Accepted: {} tokens")
    assert is_metrics_site(sglang_line, "sglang") and not is_metrics_site(sglang_line, "vllm")
    assert is_metrics_site(vllm_line, "vllm") and not is_metrics_site(vllm_line, "sglang")
    assert is_metrics_site(vllm_line, "lmdeploy")  # lmdeploy/metrics/loggers.py:89 (0.18.0): the same words
    assert not is_metrics_site(Site("raise", "ValueError", None, vllm_line.template, None, None, "x.py:2", None), "vllm")


def test_an_engine_without_a_configuration_build_runs_no_preflight():
    about, results = run_lines(sys.executable, "lmdeploy", [])
    assert not about.ran and results == {} and "CONFIG_BUILD" in (about.why or "")


def test_the_engine_side_script_refuses_a_build_it_does_not_have(tmp_path):
    script = Path(engines.__file__).parent.parent / "verify" / "engine_side" / "config_build.py"
    job, events = tmp_path / "job.json", tmp_path / "events.jsonl"
    job.write_text(json.dumps({"engine": "json", "build": "nope", "lines": []}))
    subprocess.run([sys.executable, str(script), str(job), str(events)], check=True, timeout=60)
    found = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e["event"] for e in found] == ["importing", "import_failed", "done"]
    assert "no configuration build 'nope'" in found[1]["message"] and "engine_args" in found[1]["message"]


def test_known_issues_are_read_from_each_unit(monkeypatch):
    from compat import known_issues

    entry = {"id": "made-up", "title": "t", "versions": ">=1.0", "applies_to": ("*",), "link": "https://x/issues/1",
             "fix": "f", "fixed_in": None}
    vllm = engines.get("vllm")
    made_up = dataclasses.replace(engines.get("sglang"), name="made_up", known_issues=(entry,))
    monkeypatch.setattr(engines, "all_engines", lambda: (vllm, made_up))
    (found,) = known_issues.matching("made_up", "1.2", ["llama"])
    assert found["engine"] == "made_up" and list(found)[:3] == ["id", "title", "engine"]
    assert {e["engine"] for e in known_issues.KNOWN_ISSUES} == {"vllm", "made_up"}
