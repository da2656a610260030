"""Issue 12, point 2: `--python ./venv-serve/bin/python`, relative to where the user stands, works in every
command that takes it, and every command compat prints names it absolute."""

from __future__ import annotations

import json

import pytest

from cli_helpers import compat, fake_serving_venv


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    """A working directory holding venv-serve/ (a real venv with vllm 0.20.0 installed) and the models."""
    from cli_helpers import kimi_pair

    work = tmp_path_factory.mktemp("work")
    fake_serving_venv(work / "venv-serve", version="0.20.0")
    kimi_pair(work)
    return work


REL = "./venv-serve/bin/python"


def test_probe_finds_the_engine_of_a_relative_python(serving, env):
    absolute = str(serving / "venv-serve" / "bin" / "python")
    listing = compat("probe", "--python", REL, "--json", cwd=serving, env=env)
    assert listing.code == 0, listing.err
    (found,) = listing.json()["installed"]
    assert (found["engine"], found["version"], found["python"]) == ("vllm", "0.20.0", absolute)
    report = compat("probe", "--engine", "vllm", "--python", REL, "--json", cwd=serving, env=env)
    assert report.code == 0, report.err
    assert report.json()["source"]["python"] == absolute and report.json()["version"] == "0.20.0"


def test_patch_status_and_plugin_status_in_the_serving_venv(serving, env):
    status = compat("patch", "--engine", "vllm", "--python", REL, "--status", "--json", cwd=serving, env=env)
    assert status.code == 0, status.err
    assert status.json()["source"]["python"] == str(serving / "venv-serve" / "bin" / "python")
    plugin = compat("plugin", "status", "--engine", "vllm", "--python", REL, "--json", cwd=serving, env=env)
    assert plugin.code == 0, plugin.err
    assert plugin.json()["python"] == str(serving / "venv-serve" / "bin" / "python")
    assert plugin.json()["site_packages"].startswith(str(serving / "venv-serve"))


def test_convert_for_the_installed_engine_of_a_relative_python(serving, env):
    run = compat("convert", "ckpt", "kimi-k2-eagle3", "out", "--to", "vllm", "--engine", "vllm", "--python", REL,
                 "--target", "Kimi-K2-Instruct", "--dry-run", "--json", cwd=serving, env=env)
    assert run.code == 0, run.err
    plan = run.json()["plan"]
    assert plan["engine_version"] == "0.20.0"  # the version installed in that venv
    assert str(serving / "venv-serve" / "bin" / "python") in plan["engine_source"]


def test_doctor_on_the_installed_engine_of_a_relative_python(serving, env):
    run = compat("doctor", "Kimi-K2-Instruct", "kimi-k2-eagle3", "--engine", "vllm", "--python", REL, "--offline",
                 "--json", cwd=serving, env=env)
    assert run.code == 1, run.err  # a minimal engine: checks fail, but it was found in that venv
    d = run.json()
    assert d["source"]["kind"] == "installed" and d["source"]["python"] == str(serving / "venv-serve" / "bin" / "python")
    assert "./venv-serve" not in json.dumps(d)


@pytest.mark.network
def test_doctor_fixes_on_a_release_name_the_serving_python_absolute(serving):
    """vLLM 0.17.1 needs patches for Kimi-K2: the fix patches the serving venv, named absolute."""
    run = compat("doctor", "Kimi-K2-Instruct", "kimi-k2-eagle3", "--engine", "vllm==0.17.1", "--python", REL, "--json",
                 cwd=serving)
    assert run.code == 1, run.err
    (patch,) = [s for s in run.json()["fix_steps"] if s["kind"] == "patch"]
    assert patch["command"].startswith(f"compat patch --engine vllm --python {serving / 'venv-serve' / 'bin' / 'python'} ")
    assert "./venv-serve" not in run.out and "<python" not in run.out


def test_env_reports_the_engine_of_a_relative_python(serving, env):
    run = compat("env", "--python", REL, "--json", cwd=serving, env=env)
    assert run.code == 0, run.err
    other = [i for i in run.json()["interpreters"] if not i["this"]]
    assert [i["python"] for i in other] == [str(serving / "venv-serve" / "bin" / "python")]
    assert [(e["engine"], e["version"]) for e in other[0]["engines"]] == [("vllm", "0.20.0")]


def test_a_venv_directory_names_its_python(serving, env):
    """`--python ./venv-serve` (the venv, not its python) is the venv's bin/python in every answer."""
    python = str(serving / "venv-serve" / "bin" / "python")
    listing = compat("probe", "--python", "./venv-serve", "--json", cwd=serving, env=env)
    assert listing.code == 0, listing.err
    assert [e["python"] for e in listing.json()["installed"]] == [python]
    report = compat("doctor", "Kimi-K2-Instruct", "kimi-k2-eagle3", "--engine", "vllm", "--python", "./venv-serve",
                    "--offline", "--json", cwd=serving, env=env)
    assert report.json()["source"]["python"] == python, report.err
    assert f'"{serving / "venv-serve"}"' not in report.out  # the directory itself is named nowhere
    run = compat("env", "--python", "venv-serve", "--json", cwd=serving, env=env)
    assert [i["python"] for i in run.json()["interpreters"] if not i["this"]] == [python]


@pytest.mark.network
def test_doctor_fixes_on_a_release_name_the_python_of_a_venv_directory(serving):
    run = compat("doctor", "Kimi-K2-Instruct", "kimi-k2-eagle3", "--engine", "vllm==0.17.1", "--python", "venv-serve",
                 "--json", cwd=serving)
    assert run.code == 1, run.err
    (patch,) = [s for s in run.json()["fix_steps"] if s["kind"] == "patch"]
    assert patch["command"].startswith(f"compat patch --engine vllm --python {serving / 'venv-serve' / 'bin' / 'python'} ")
    assert run.json()["source"]["kind"] == "released"  # the release is read; the venv only named in the fixes


def test_a_relative_python_that_does_not_exist_says_which_path_it_tried(serving, env):
    run = compat("probe", "--engine", "vllm", "--python", "./nope/bin/python", cwd=serving, env=env)
    assert run.code == 2 and str(serving / "nope" / "bin" / "python") in run.err
