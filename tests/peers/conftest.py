"""tests/peers: the peers' own code judges compat's layouts (marker `peers`).

speculators 0.9.0, nvidia-modelopt and huggingface_hub run in the venv `.ci/peers-venv` builds (CPU torch;
COMPAT_PEERS_VENV says where, default ~/.cache/compat/peers-venv). The scripts in in_venv/ run there, in a
child process, and answer in JSON on stdout; compat runs in this interpreter. Without the venv these tests
skip, except under CI=true, where they fail. SpecForge and NeMo-Automodel cannot be installed here: their
tests are modelled on names and checks read from their released source, and say so.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "checkpoints"))  # ckpt_builders: tiny drafters and targets
sys.path.insert(0, str(Path(__file__).resolve().parent))

from peer_venv import peers_venv  # noqa: E402


@pytest.fixture(scope="session")
def peers_python() -> Path:
    python = peers_venv() / "bin" / "python"
    if not python.exists():
        import parts  # tests/parts.py: skip with the command that makes it (fail under CI=true)

        parts.require("peers-venv", f"no peers venv at {peers_venv()}")
    return python
