"""The command line: exit codes, --json shape, the no-engine listing."""

import json
import subprocess
import sys

from compat.cli import main


def run(*args):
    proc = subprocess.run([sys.executable, "-m", "compat", *args], capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def _tree(tmp_path):
    pkg = tmp_path / "vllm"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_version.py").write_text("__version__ = '0.11.0'\n")
    return tmp_path


def test_probe_json_has_the_stable_top_level_keys(tmp_path):
    code, out, _ = run("probe", "--path", str(_tree(tmp_path)), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["engine"] == "vllm" and report["version"] == "0.11.0"
    assert report["source"] == {"kind": "path", "location": str(tmp_path.resolve())}
    for key in ("speculative_config", "eagle3_whitelist", "eagle3_targets", "eagle3_drafters", "aux_layer_ids", "cli_flags"):
        assert key in report, key


def test_exit_codes_mean_something(tmp_path):
    assert run("probe", "--engine", "tensorrt")[0] == 2  # usage
    assert run("probe", "--path", str(tmp_path / "nope"))[0] == 2  # a path that names nothing (the exit-code table)
    code, _, err = run("probe", "--path", str(tmp_path))  # exists, but is not a tree
    assert code == 3 and "not an engine source tree" in err
    assert run("frobnicate")[0] == 2


def test_source_error_in_json_mode_is_json_too(tmp_path):
    (tmp_path / "not-a-tree").mkdir()  # a folder holding no engine: the source cannot be obtained (3)
    code, out, _ = run("probe", "--path", str(tmp_path / "not-a-tree"), "--json")
    assert code == 3
    assert json.loads(out)["exit_code"] == 3


def test_probe_without_engine_lists_installed_or_shows_how(capsys):
    assert main(["probe"]) == 0
    out = capsys.readouterr().out
    assert "compat probe --engine vllm==" in out or "Installed in" in out
