"""tests/peers: the peers' own code judges compat's layouts (marker `peers`).

speculators 0.9.0, nvidia-modelopt and huggingface_hub run in the venv `.ci/peers-venv` builds (CPU torch;
COMPAT_PEERS_VENV says where, default ~/.cache/compat/peers-venv). The scripts in in_venv/ run there, in a
child process, and answer in JSON on stdout; compat runs in this interpreter. Without the venv these tests
skip, except under CI=true, where they fail. SpecForge and NeMo-Automodel cannot be installed here: their
tests are modelled on names and checks read from their released source, and say so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "checkpoints"))  # ckpt_builders: the tiny drafters and targets

DEFAULT_VENV = Path.home() / ".cache" / "compat" / "peers-venv"


def peers_venv() -> Path:
    return Path(os.environ.get("COMPAT_PEERS_VENV") or DEFAULT_VENV)


@pytest.fixture(scope="session")
def peers_python() -> Path:
    python = peers_venv() / "bin" / "python"
    if not python.exists():
        message = f"no peers venv at {peers_venv()} (make it with: bash .ci/peers-venv)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return python


def run_in_peers(python: Path, script: str, *args: str, timeout: int = 600) -> dict:
    """Run in_venv/SCRIPT with the peers' python; its last stdout line is the JSON answer."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([str(python), str(HERE / "in_venv" / script), *args], capture_output=True, text=True,
                          timeout=timeout, env=env)
    if done.returncode != 0:
        raise AssertionError(f"{script} {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compat(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compat", *args], capture_output=True, text=True, cwd=cwd, timeout=600)
