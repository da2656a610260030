"""Issue 33, item 1: every part a test needs beyond the test extra has a marker registered in pyproject, and a test
whose part is missing is skipped with the command that provides it, or fails under CI=true (tests/parts.py). The
parts are made to read as missing with COMPAT_TEST_WITHOUT, as the machine's own sshd and Chromium cannot be removed."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import parts

ROOT = Path(__file__).resolve().parents[1]


def test_every_marker_is_registered():
    registered = {line.split(":")[0] for line in tomllib.loads((ROOT / "pyproject.toml").read_text())
                  ["tool"]["pytest"]["ini_options"]["markers"]}
    assert set(parts.markers()) <= registered, set(parts.markers()) - registered


def _pytest(*words: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "CI"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *words],
                          capture_output=True, text=True, cwd=ROOT, env={**environ, **env}, timeout=600)


def test_a_missing_sshd_skips_the_fleet_tests_with_the_command(tmp_path):
    run = _pytest("tests/fleet/test_fleet_ssh.py", COMPAT_TEST_WITHOUT="sshd")
    assert run.returncode == 0, run.stdout[-3000:]
    assert " passed" not in run.stdout.splitlines()[-1] and "skipped" in run.stdout.splitlines()[-1], run.stdout[-2000:]
    assert "apt-get install -y openssh-server" in run.stdout and "tools/test.sh" in run.stdout
    assert "error" not in run.stdout.splitlines()[-1]


def test_under_ci_a_missing_part_fails():
    run = _pytest("tests/matrix_page/test_matrix_page.py", "-x", COMPAT_TEST_WITHOUT="chromium", CI="true")
    assert run.returncode == 1, run.stdout[-3000:]
    assert "CI sets up every part (tools/test.sh) before the tests" in run.stdout
    assert "apt-get install -y chromium" in run.stdout


def test_deselecting_a_part_by_its_marker():
    def collected(*words: str) -> set[str]:
        return {line for line in _pytest("tests/fleet", "--collect-only", *words).stdout.splitlines() if "::" in line}

    every, without, only = collected(), collected("-m", "not fleet"), collected("-m", "fleet")
    assert only and without and only.isdisjoint(without) and only | without == every
    assert all("test_fleet_ssh.py" in t or "test_fleet_changes.py" in t or "test_fleet_ray.py" in t
               or "test_fleet_cache.py" in t for t in only), only  # the sshd fixture's users, found from it


def test_the_setup_script_reads_what_is_missing():
    listing = subprocess.run([sys.executable, str(ROOT / "tests" / "parts.py"), "missing"], capture_output=True,
                             text=True, env={**os.environ, "COMPAT_TEST_WITHOUT": "strace,peers-venv"}, timeout=300)
    lines = dict(line.split("\t") for line in listing.stdout.splitlines())
    assert lines["strace"] == "apt-get install -y strace" and lines["peers-venv"] == "bash .ci/peers-venv"


def _plan(*words: str) -> str:
    """What `tools/test.sh WORDS` would set up (TEST_SH_PLAN=1: the collection runs, nothing is installed)."""
    run = subprocess.run(["bash", str(ROOT / "tools" / "test.sh"), *words], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "TEST_SH_PLAN": "1", "PYTHON": sys.executable}, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stderr


def test_the_test_command_sets_up_only_what_the_selected_tests_need():
    """Issue 40, point 8: `tools/test.sh tests/cli` built three venvs (8.3 GB) and installed sshd for 240 CLI tests.
    It builds no engine venv now; without arguments (.ci/run: the whole suite) it sets up every part."""
    cli = _plan("tests/cli")
    assert ".ci/engine-venv" not in cli and ".ci/peers-venv" not in cli and "openssh-server" not in cli, cli
    assert f"would run: {sys.executable} -m pytest tests/cli" in cli
    engine = _plan("tests/engine/test_plugin_manifest_engine.py")
    assert "would run: bash .ci/engine-venv\n" in engine and ".ci/peers-venv" not in engine, engine
    full = _plan()
    assert all(f"would run: bash .ci/{script}" in full for script in ("engine-venv\n", "engine-venv 0.16.0", "peers-venv")), full
