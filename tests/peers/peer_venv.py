"""Running the peers' own code: the venv .ci/peers-venv builds, and compat itself (a uniquely named module,
imported by the tests; conftest.py only holds the fixture)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_VENV = Path.home() / ".cache" / "compat" / "peers-venv"


def peers_venv() -> Path:
    return Path(os.environ.get("COMPAT_PEERS_VENV") or DEFAULT_VENV)


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
