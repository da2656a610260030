"""verify --server as a person at a terminal meets it: a progress bar, Ctrl-C that ends the run at once, and a
server that publishes no counters (an honest `unknown`, not a number). The server is the modelled vLLM 0.32.0 of
modelled_engine.py (names read from that release's source, behaviour modelled)."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compat.report import build_report
from compat.verify.server import ServerRun, builtin, verify_server
from modelled_engine import Behaviour, ModelledEngine

pytestmark = pytest.mark.network
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def report(pinned_release) -> dict:
    return build_report(pinned_release("vllm", "0.32.0"))


def test_a_terminal_gets_a_progress_bar(report):
    leader, follower = pty.openpty()
    with ModelledEngine(report, Behaviour(delay=0.02)).serve() as server:
        proc = subprocess.run([sys.executable, "-m", "compat", "verify", "--server", server.url, "--num-prompts", "6",
                               "--max-tokens", "20"], stdout=subprocess.PIPE, stderr=follower, cwd=ROOT, timeout=300,
                              env={**os.environ, "COLUMNS": "120", "TERM": "xterm"})
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert proc.returncode == 0, shown.decode(errors="replace")[-2000:]
    text = shown.decode(errors="replace")
    assert "requests to " in text and "━" in text and "6/6" in text  # rich's bar, drawn on the terminal only
    assert b"verdict: healthy" in proc.stdout


def test_ctrl_c_ends_the_run_at_once(report):
    with ModelledEngine(report, Behaviour(delay=1.0)).serve() as server:  # a reply takes ~60 s
        proc = subprocess.Popen([sys.executable, "-m", "compat", "verify", "--server", server.url, "--num-prompts", "4",
                                 "--max-tokens", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                                text=True)
        time.sleep(6)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        waited = time.monotonic() - sent
    assert proc.returncode == 130 and waited < 10, (waited, err[-2000:])
    assert "Traceback" not in err


def test_no_metrics_at_all_is_unknown_not_a_number(report):
    with ModelledEngine(report, Behaviour(metrics=False)).serve() as server:
        d = verify_server(ServerRun(server.url, builtin().take(2), max_tokens=5))
    assert d["verdict"] == "unknown" and d["acceptance"]["rate"] is None and not d["passed"]
    assert any("GET /metrics failed" in n for n in d["acceptance"]["notes"])
