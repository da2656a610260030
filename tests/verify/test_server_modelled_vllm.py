"""verify --server's vLLM path against a modelled server that speaks the names compat's probes read from the real
vLLM 0.32.0 and 0.10.0 sources (fetched into the cache): the paths the real `vllm serve` tests (tests/engine)
cannot reach cheaply: a release without JSON server info, dev mode off, per-position rates shaped like the
published baselines, other traffic, a baseline whose greedy outputs differ, and the command line's answers to
bad input (exit codes, one error, no traceback).

Modelled: the server's text and counter arithmetic. Read from the releases: every path and name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compat.report import build_report
from compat.verify.server import ServerRun, builtin, verify_server
from modelled_engine import Behaviour, ModelledEngine
from server_fakes import FakeServer

pytestmark = pytest.mark.network
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def reports(pinned_release) -> dict[str, dict]:
    return {v: build_report(pinned_release("vllm", v)) for v in ("0.32.0", "0.10.0")}


def run(modelled: ModelledEngine, n: int = 5, **options) -> dict:
    with modelled.serve() as server:
        return verify_server(ServerRun(server.url, builtin().take(n), max_tokens=30, concurrency=2, **options))


def test_per_position_counters_give_the_pattern_of_a_healthy_drafter(reports):
    d = run(ModelledEngine(reports["0.32.0"], Behaviour(per_position=(0.73, 0.52, 0.35))))
    assert d["acceptance"]["per_position"] == pytest.approx([0.73, 0.52, 0.35], abs=0.03)
    assert d["verdict"] == "healthy" and d["diagnosis"]["pattern"] == "normal-decay" and d["next"] is None
    s = d["server"]
    assert (s["method"], s["draft_model"], s["num_speculative_tokens"]) == ("eagle3", "/models/eagle3-drafter", 3)
    assert s["detected_from"]["method"] == "GET /server_info?config_format=json"


def test_engine_with_a_version_names_the_release_whose_names_are_read(reports):
    d = run(ModelledEngine(reports["0.32.0"], Behaviour()), engine="vllm==0.10.0")
    assert d["server"]["version"] == "0.32.0" and d["server"]["names_from"]["release"] == "0.10.0"
    assert d["server"]["detected_from"]["engine"] == "--engine" and d["verdict"] == "healthy"


def test_a_release_without_json_server_info_is_read_from_its_text(reports):
    d = run(ModelledEngine(reports["0.10.0"], Behaviour()))
    assert d["server"]["method"] == "eagle3" and d["server"]["num_speculative_tokens"] == 3
    assert d["server"]["detected_from"]["method"] == "GET /server_info"


def test_dev_mode_off_names_the_variable_and_where_the_release_reads_it(reports):
    d = run(ModelledEngine(reports["0.32.0"], Behaviour(dev_mode=False, per_position=(0.0, 0.0, 0.0))))
    assert d["server"]["method"] is None and d["server"]["num_speculative_tokens"] == 3  # from the per-position series
    note = next(n for n in d["server"]["notes"] if "VLLM_SERVER_DEV_MODE=1" in n)
    assert "vllm/entrypoints/launchers/api_server/routers.py:" in note
    assert d["verdict"] == "collapsed" and '\\"model\\":\\"<DRAFTER>\\"' in d["next"]  # the line to fill in


def test_wrong_layers_pattern_is_collapsed_and_points_at_doctor(reports):
    d = run(ModelledEngine(reports["0.32.0"], Behaviour(per_position=(0.05, 0.035, 0.025))), n=40)
    assert d["verdict"] == "collapsed" and d["diagnosis"]["pattern"] == "first-position-near-zero"
    assert d["next"] == ('compat doctor --engine vllm==0.32.0 --launch "vllm serve org/target-8b --speculative-config '
                         "'{\\\"method\\\":\\\"eagle3\\\",\\\"model\\\":\\\"/models/eagle3-drafter\\\",\\\"num_speculative_tokens\\\":3}'\"")
    launch = subprocess.run(["bash", "-c", 'printf %s ' + d["next"].split(" --launch ", 1)[1]], capture_output=True, text=True)
    assert launch.stdout == ("vllm serve org/target-8b --speculative-config "
                             "'{\"method\":\"eagle3\",\"model\":\"/models/eagle3-drafter\",\"num_speculative_tokens\":3}'")


def test_no_speculation_and_other_traffic(reports):
    d = run(ModelledEngine(reports["0.32.0"], Behaviour(speculating=False, running_at_start=2)))
    assert d["verdict"] == "no-speculation" and d["server"]["speculating"] is False
    assert "vllm/v1/spec_decode/metrics.py" in d["acceptance"]["source"]
    assert d["traffic"]["other_traffic"] is True and "2 request(s) were running" in d["traffic"]["detail"]


def test_baseline_speedup_and_greedy_output_equality(reports):
    spec = ModelledEngine(reports["0.32.0"], Behaviour())
    same = ModelledEngine(reports["0.32.0"], Behaviour(speculating=False))
    other = ModelledEngine(reports["0.32.0"], Behaviour(speculating=False, text="Something else entirely, said slowly. "))
    with spec.serve() as a, same.serve() as b, other.serve() as c:
        equal = verify_server(ServerRun(a.url, builtin().take(4), max_tokens=20, baseline=b.url))
        differ = verify_server(ServerRun(a.url, builtin().take(4), max_tokens=20, baseline=c.url))
    assert equal["baseline"]["outputs_equal"] is True and equal["baseline"]["compared"] == 4
    assert equal["baseline"]["speedup"] > 0 and equal["passed"]
    assert differ["baseline"]["outputs_equal"] is False and differ["baseline"]["mismatched"] == 4
    assert differ["baseline"]["mismatches"][0]["first_difference_at"] == 0
    assert [f["check"] for f in differ["failures"]] == ["baseline"] and not differ["passed"]
    assert "greedy outputs differ from the baseline on 4 of 4 prompts" in differ["failures"][0]["message"]


def test_a_sampled_run_says_which_engine_path_it_exercises_and_compares_no_outputs(reports):
    spec = ModelledEngine(reports["0.32.0"], Behaviour())
    plain = ModelledEngine(reports["0.32.0"], Behaviour(speculating=False, text="Other words entirely. "))
    with spec.serve() as a, plain.serve() as b:
        d = verify_server(ServerRun(a.url, builtin().take(3), max_tokens=10, temperature=0.7, seed=1, baseline=b.url))
    assert d["prompts"]["sampling"] == "sampled (temperature 0.7)" and "rejection sampling" in d["prompts"]["note"]
    assert d["baseline"]["outputs_equal"] is None and d["baseline"]["compared"] == 0


# -- the command line ------------------------------------------------------------------------------

def compat(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"} | (env or {})
    return subprocess.run([sys.executable, "-m", "compat", "verify", *args], capture_output=True, text=True, cwd=ROOT,
                          env=environment, timeout=300)


def test_cli_json_report_and_exit_codes(reports):
    with ModelledEngine(reports["0.32.0"], Behaviour()).serve() as ok, \
            ModelledEngine(reports["0.32.0"], Behaviour(per_position=(0.0, 0.0, 0.0))).serve() as bad:
        good = compat("--server", ok.url, "--num-prompts", "3", "--max-tokens", "10", "--json")
        worse = compat("--server", bad.url, "--num-prompts", "3", "--max-tokens", "10", "--min-acceptance", "0.2")
    assert good.returncode == 0, good.stderr
    doc = json.loads(good.stdout)
    assert doc["schema"] == "compat.verify-server/1" and doc["verdict"] == "healthy"
    assert {"acceptance", "server", "latency", "tokens_per_s", "verdict", "rule", "diagnosis"} <= set(doc)
    assert set(doc["server"]) >= {"url", "engine", "version", "model", "method", "num_speculative_tokens", "draft_model"}
    assert set(doc["latency"]) >= {"ttft", "itl"} and doc["tokens_per_s"]["aggregate"] > 0
    assert worse.returncode == 1 and "verdict: collapsed" in worse.stdout and "next: compat doctor" in worse.stdout
    assert "below --min-acceptance 0.2" in worse.stdout


def test_cli_401_names_the_key_and_takes_it_from_the_environment(reports):
    with ModelledEngine(reports["0.32.0"], Behaviour(api_key="s3cret")).serve() as server:
        refused = compat("--server", server.url, "--num-prompts", "2", "--max-tokens", "5")
        wrong = compat("--server", server.url, "--num-prompts", "2", "--max-tokens", "5", "--api-key", "nope")
        fine = compat("--server", server.url, "--num-prompts", "2", "--max-tokens", "5", "--json",
                      env={"OPENAI_API_KEY": "s3cret"})
    assert refused.returncode == 2 and "OPENAI_API_KEY" in refused.stderr and "Traceback" not in refused.stderr
    assert wrong.returncode == 2 and "refused the API key from --api-key" in wrong.stderr
    assert fine.returncode == 0, fine.stderr[-2000:]


def test_cli_unreachable_is_exit_3_with_one_error():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = compat("--server", f"http://127.0.0.1:{port}", "--json")
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "compat.error/1" and doc["exit_code"] == 3 and "connection refused" in doc["error"]
    assert len([line for line in proc.stderr.splitlines() if line.startswith("error")]) == 1


def test_cli_something_that_is_not_an_openai_server_is_exit_4():
    routes = {"GET /v1/models": lambda r: r.send(200, "<html><body>Grafana</body></html>", "text/html")}
    with FakeServer(routes) as server:
        proc = compat("--server", server.url)
    assert proc.returncode == 4 and "not an OpenAI-compatible server" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, says", [
    (["--baseline", "http://x:1"], "go(es) with --server"),
    (["--server", "http://x:1", "--canary"], "drop --canary"),
    (["--server", "ftp://x"], "not an http(s) URL"),
    (["--server", "http://x:1", "--temperature", "9"], "between 0 and 2"),
    (["--server", "http://x:1", "--concurrency", "0"], "at least 1"),
])
def test_cli_usage_errors(args, says):
    proc = compat(*args)
    assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr


def test_an_unreachable_baseline_fails_before_anything_is_sent(reports):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    engine = ModelledEngine(reports["0.32.0"], Behaviour())
    with engine.serve() as server:
        proc = compat("--server", server.url, "--baseline", f"http://127.0.0.1:{port}", "--num-prompts", "2")
        posted = [c for c in server.calls if c.startswith("POST")]
    assert proc.returncode == 3 and f"127.0.0.1:{port}" in proc.stderr and posted == []
