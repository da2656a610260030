"""Issue 12, point 8: `compat env`, the block for a bug report: compat, the Python, the platform, the engines
of this interpreter and of --python (with compat's patch record and plugin), torch/CUDA as that interpreter
has them (never imported into compat), the cache."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from pathlib import Path

import pytest

import compat as compat_package
from cli_helpers import compat, fake_serving_venv


def test_env_json_says_what_a_bug_report_needs(env, tmp_path):
    run = compat("env", "--json", env=env)
    assert run.code == 0, run.err
    doc = run.json()
    assert doc["schema"] == "compat.env/1"
    assert doc["compat"] == {"version": compat_package.__version__, "location": os.path.dirname(compat_package.__file__)}
    assert doc["python"]["version"] == platform.python_version()
    assert doc["platform"]["machine"] == platform.machine()
    (this,) = doc["interpreters"]
    assert this["this"] and Path(this["python"]).parent == Path(sys.executable).parent  # the venv compat runs in
    assert this["engines"] == [] and this["plugins"] == []  # the test venv has no engine
    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = None
    assert this["packages"].get("torch") == torch
    if torch:
        assert this["torch"]["version"] == torch and "cuda_available" not in this["torch"]  # read from its files
    assert doc["cache"]["path"] == str(tmp_path / "xdg-cache" / "compat")


def test_env_of_the_serving_venv(env, tmp_path):
    python = fake_serving_venv(tmp_path / "venv-serve", version="0.20.0")
    run = compat("env", "--python", python, env=env)
    assert run.code == 0, run.err
    assert f"--python: {python}" in run.out
    assert "vllm 0.20.0  (distribution vllm, " in run.out and "compat patches: none" in run.out
    assert "compat plugin: none" in run.out and "release cache: " in run.out


def test_env_never_imports_torch_here(env):
    import subprocess

    code = ("import sys; from compat.commands import env; env.collect(None, None); "
            "print('torch' in sys.modules, 'vllm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["False", "False"]


def test_an_interpreter_that_cannot_be_run_is_reported_and_its_code_said(env, tmp_path):
    run = compat("env", "--python", tmp_path / "missing" / "python", "--json", env=env)
    assert run.code == 2  # the report is printed whole; the exit code says the path named nothing
    other = [i for i in run.json()["interpreters"] if not i["this"]]
    assert "no such interpreter" in other[0]["error"]


@pytest.mark.network
def test_env_shows_what_compat_patched_and_the_plugin(tmp_path):
    """The real vLLM 0.17.1 source installed in a venv: patch it, see the record; revert, install the plugin, see it."""
    from doctor_helpers import open_release

    python = fake_serving_venv(tmp_path / "venv-serve", version="0.17.1", tree=open_release("vllm", "0.17.1").root)
    assert compat("patch", "--engine", "vllm", "--python", python).code == 0
    (engine,) = [i for i in compat("env", "--python", python, "--json").json()["interpreters"] if not i["this"]][0]["engines"]
    assert {p["id"] for p in engine["patches"]} >= {"vllm-eagle3-whitelist", "vllm-deepseek-eagle3-aux"}
    assert all(p["intact"] for p in engine["patches"])
    assert compat("patch", "--engine", "vllm", "--python", python, "--revert").code == 0
    assert compat("plugin", "install", "--engine", "vllm", "--python", python).code == 0
    other = [i for i in compat("env", "--python", python, "--json").json()["interpreters"] if not i["this"]][0]
    assert other["engines"][0]["patches"] == []
    (plugin,) = other["plugins"]
    assert plugin["engine"] == "vllm" and plugin["engine_version"] == "0.17.1"
    assert "compat plugin: vllm (built for 0.17.1" in compat("env", "--python", python).out
