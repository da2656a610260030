"""Issue 12, point 5: one error shape under --json everywhere ({"schema", "error", "fix", "exit_code"}), for
every command and every early exit, argparse's usage errors included; and exit codes that mean the same in
every command (compat/core/output.py EXIT_TABLE)."""

from __future__ import annotations

import json

import pytest

from cli_helpers import compat, engine_tree

SHAPE = {"schema", "error", "fix", "exit_code"}


def assert_error(run, code: int) -> dict:
    assert run.code == code, (run.out, run.err)
    doc = json.loads(run.out)  # one document, nothing else on stdout
    assert set(doc) == SHAPE and doc["schema"] == "compat.error/1" and doc["exit_code"] == code
    assert isinstance(doc["error"], str) and doc["error"] and (doc["fix"] is None or isinstance(doc["fix"], str))
    assert doc["error"] in run.err.replace("\n  fix: ", " ") or doc["error"].split(": ", 1)[-1] in run.err  # for people too
    return doc


@pytest.mark.parametrize("argv, code", [
    (["probe", "--path", "missing"], 2),
    (["probe", "--engine", "tensorrt"], 2),
    (["patch", "--path", "missing", "--dry-run"], 2),
    (["plugin", "status", "--engine", "vllm", "--python", "./missing/bin/python"], 2),
    (["doctor", "missing-target", "models/kimi-k2-eagle3", "--path", "tree"], 2),
    (["doctor", "models/Kimi-K2-Instruct", "models/kimi-k2-eagle3"], 2),
    (["convert", "ckpt", "missing", "out", "--to", "vllm"], 2),
    (["convert", "ckpt", "models/kimi-k2-eagle3", "out", "--to", "vllm", "--layer-ids", "a"], 2),
    (["cache", "clean"], 2),
    (["cache", "list", "--all"], 2),
], ids=lambda v: " ".join(v) if isinstance(v, list) else str(v))
def test_errors_of_every_command_have_one_shape(tmp_path, pair, env, argv, code):
    engine_tree(tmp_path / "tree")
    assert_error(compat(*argv, "--json", cwd=tmp_path, env=env), code)


@pytest.mark.parametrize("argv", [
    ["probe", "--jsn"],
    ["patch", "--dry-run", "--revert"],  # mutually exclusive
    ["plugin", "install"],  # --engine is required
    ["doctor", "only-a-target"],
    ["convert"],  # the subcommand is required
    ["convert", "ckpt", "a", "b", "--to", "nowhere"],
    ["cache", "nuke"],
    ["env", "--pythn", "x"],
    ["frobnicate"],
    ["--color", "pink", "probe"],
], ids=" ".join)
def test_usage_errors_are_json_too_when_json_is_on_the_line(argv):
    doc = assert_error(compat(*argv, "--json"), 2)
    assert doc["fix"].endswith(("--help lists the options)", "--help lists the options", "--help lists the commands"))


def test_a_drafter_directory_without_config_json_is_4_everywhere(tmp_path, pair, env):
    engine_tree(tmp_path / "tree")
    (tmp_path / "empty").mkdir()
    target, _ = pair
    doctor = assert_error(compat("doctor", target, tmp_path / "empty", "--path", "tree", "--json", cwd=tmp_path, env=env), 4)
    convert = assert_error(compat("convert", "ckpt", tmp_path / "empty", tmp_path / "out", "--to", "vllm", "--json", env=env), 4)
    assert "config.json" in doctor["error"] and "config.json" in convert["error"]


def test_a_target_directory_without_config_json_is_4_everywhere(tmp_path, pair, env):
    engine_tree(tmp_path / "tree")
    (tmp_path / "empty").mkdir()
    _, drafter = pair
    doctor = assert_error(compat("doctor", tmp_path / "empty", drafter, "--path", "tree", "--json", cwd=tmp_path, env=env), 4)
    convert = assert_error(compat("convert", "ckpt", drafter, tmp_path / "out", "--to", "vllm", "--target", tmp_path / "empty",
                                  "--json", env=env), 4)
    assert "no config.json" in doctor["error"] and "no config.json" in convert["error"]


def test_a_path_that_names_nothing_is_2_everywhere(tmp_path, pair, env):
    engine_tree(tmp_path / "tree")
    target, drafter = pair
    for argv in (["doctor", tmp_path / "nope", drafter, "--path", "tree"], ["doctor", target, tmp_path / "nope", "--path", "tree"],
                 ["convert", "ckpt", tmp_path / "nope", tmp_path / "out", "--to", "vllm"],
                 ["convert", "ckpt", drafter, tmp_path / "out", "--to", "vllm", "--target", tmp_path / "nope"]):
        doc = assert_error(compat(*argv, "--json", cwd=tmp_path, env=env), 2)
        assert "no such file or directory" in doc["error"]


def test_every_help_prints_the_same_table_as_compat_output():
    from compat.core.output import EXIT_TABLE

    for words in (["probe"], ["doctor"], ["convert", "ckpt"], ["cache"], ["patch"]):
        text = compat(*words, "--help").out
        for code, meaning in EXIT_TABLE.items():
            assert f"  {code:<4} {meaning.splitlines()[0]}" in text, (words, code)


def test_success_documents_carry_a_schema_too(tmp_path, env):
    engine_tree(tmp_path / "tree")
    for argv, kind in ((["probe", "--path", "tree"], "compat.probe/1"), (["cache", "list"], "compat.cache-list/1"),
                       (["cache", "dir"], "compat.cache-dir/1"), (["env"], "compat.env/1")):
        run = compat(*argv, "--json", cwd=tmp_path, env=env)
        assert run.code == 0 and json.loads(run.out)["schema"] == kind


def test_an_interrupted_run_is_an_error_document_too(tmp_path, env):
    """Ctrl-C while compat waits on the serving venv's interpreter (a slow one, written here)."""
    import signal
    import subprocess
    import time

    from cli_helpers import COMPAT

    slow = tmp_path / "slow-python"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    proc = subprocess.Popen([str(COMPAT), "probe", "--engine", "vllm", "--python", str(slow), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert json.loads(out) == {"schema": "compat.error/1", "error": "interrupted", "fix": None, "exit_code": 130}
    assert "error: interrupted" in err and "Traceback" not in err
