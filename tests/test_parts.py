"""Issue 33, item 1: every part a test needs beyond the test extra has a marker registered in pyproject, and a test
whose part is missing is skipped with the command that provides it, or fails under CI=true (tests/parts.py). The
parts are made to read as missing with COMPAT_TEST_WITHOUT, as the machine's own sshd and Chromium cannot be removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import parts

ROOT = Path(__file__).resolve().parents[1]
REGISTERED = {line.split(":")[0] for line in tomllib.loads((ROOT / "pyproject.toml").read_text())
              ["tool"]["pytest"]["ini_options"]["markers"]}


def test_every_marker_is_registered():
    assert set(parts.markers()) <= REGISTERED, set(parts.markers()) - REGISTERED


def _whole_suite(config) -> bool:
    """This session collected every test (CI's `pytest`, no selection): its items are the census."""
    selected = (config.option.markexpr, config.option.keyword, config.getoption("deselect", None),
                config.getoption("lf", False))
    if any(selected):
        return False
    tests = (ROOT / "tests").resolve()
    return config.args_source == pytest.Config.ArgsSource.TESTPATHS or \
        all(Path(config.invocation_params.dir, a).resolve() == tests for a in config.args)


def test_every_registered_marker_selects_tests(request, tmp_path):
    """A marker that selects nothing deselects nothing either: `-m "not torch"` would promise what it does not do."""
    if _whole_suite(request.config):
        counts = parts.marker_census(request.session.items)
    else:  # a collection of the whole suite in a child process (conftest.py writes the census)
        out = tmp_path / "census.json"
        run = _pytest("--collect-only", COMPAT_MARKER_CENSUS=str(out))
        assert run.returncode == 0 and out.is_file(), run.stdout[-3000:]
        counts = json.loads(out.read_text())
    empty = sorted(m for m in REGISTERED if not counts.get(m))
    assert not empty, f"markers registered in pyproject.toml that no test carries: {empty} ({counts})"


def test_a_marker_shared_by_parts_names_its_part():
    """`engine` is two parts' marker: bare, with neither fixture, it says nothing checkable; named, it needs that one."""
    engine, older = parts.BY_NAME["engine-venv"], parts.BY_NAME["engine-venv-0.16.0"]
    assert parts.needed(set(), {"engine": ("engine-venv-0.16.0",)}) == [older]
    assert parts.needed({"engine_python"}, {"engine": ()}) == [engine]
    assert parts.needed({"older_engine_python"}, {"engine": ()}) == [older]
    assert parts.needed(set(), {"strace": ()}) == [parts.BY_NAME["strace"]]
    with pytest.raises(ValueError, match=r"pytest.mark.engine belongs to the parts engine-venv, engine-venv-0.16.0, engine-venv-0.17.1: "
                                         r"name the one this test needs \(pytest.mark.engine\('engine-venv'\)\)"):
        parts.needed(set(), {"engine": ()})
    with pytest.raises(ValueError, match=r"pytest.mark.engine\('vllm'\): vllm is not a part of the marker"):
        parts.needed(set(), {"engine": ("vllm",)})


def test_under_ci_a_skip_fails_but_a_stress_campaigns(tmp_path):
    """conftest.py: CI sets up every part, so a skip there is a test left out: it fails, and the summary counts the
    stress campaigns (COMPAT_STRESS) apart, the only skips allowed."""
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n"
        "def test_left_out():\n    pytest.skip('no such thing here')\n"
        "@pytest.mark.stress\ndef test_campaign():\n    pass\n"
        "def test_run():\n    pass\n")
    # the suite's conftest.py as a plugin (tests/ on the path), its pyproject for the markers; the file is elsewhere
    words = ("-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), "-p", "conftest", str(tmp_path / "test_skips.py"))
    path = {"PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])}
    local, ci = _pytest(*words, **path, COMPAT_STRESS="0"), _pytest(*words, **path, COMPAT_STRESS="0", CI="true")
    assert local.returncode == 0 and "2 skipped" in local.stdout, local.stdout[-2000:]
    assert "skipped: 1 stress campaign (COMPAT_STRESS=1 runs them), 1 other test (CI=true fails these)" in local.stdout
    assert ci.returncode == 1 and "1 failed" in ci.stdout and "1 skipped" in ci.stdout, ci.stdout[-2000:]
    assert "skipped under CI=true, where only the stress campaigns (COMPAT_STRESS) may be: no such thing here" in ci.stdout
    assert "skipped: 1 stress campaign (COMPAT_STRESS=1 runs them), 0 other tests" in ci.stdout


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
    assert f"would run: {sys.executable} -m pytest -n 2 --dist loadgroup tests/cli" in cli
    engine = _plan("tests/engine/test_plugin_manifest_engine.py")
    assert "would run: bash .ci/engine-venv\n" in engine and ".ci/peers-venv" not in engine, engine
    full = _plan()
    assert all(f"would run: bash .ci/{script}" in full for script in ("engine-venv\n", "engine-venv 0.16.0", "peers-venv")), full
