"""Issue 12, point 3: output piped to a reader that goes away (`| head -1`) never ends in a BrokenPipeError
traceback, and compat exits 0 (rich's own handling exits 1, which reads as "a check failed"), or with the
code of what it found when that was known before printing (doctor's failed check is 1, read or not). Real
shell pipes: `| true` closes the pipe before compat writes anything, `| head -1` after the first line."""

from __future__ import annotations

import pytest

from cli_helpers import COMPAT, engine_tree, shell


def piped(command: str, reader: str, *, cwd, env=None):
    """Run `command | reader` in bash; compat's own exit status (PIPESTATUS[0]) and its stderr."""
    run = shell(f"{command} 2>compat.err | {reader} >/dev/null; echo ${{PIPESTATUS[0]}}; cat compat.err", cwd=cwd, env=env)
    status, _, err = run.out.partition("\n")
    return int(status), err


@pytest.fixture
def work(tmp_path, pair):
    engine_tree(tmp_path / "tree")
    return tmp_path


OFFLINE = [
    "compat probe --path tree --json",
    "compat probe --path tree",
    "compat doctor models/Kimi-K2-Instruct models/kimi-k2-eagle3 --path tree --offline",
    "compat doctor models/Kimi-K2-Instruct models/kimi-k2-eagle3 --path tree --offline --json",
    "compat convert ckpt models/kimi-k2-eagle3 out --to vllm --dry-run",
    "compat convert ckpt models/kimi-k2-eagle3 out --to vllm --dry-run --json",
    "compat cache list",
    "compat env",
    "compat --help",
    "compat convert ckpt --help",
    "compat probe --jsn --json",
]


@pytest.mark.parametrize("reader", ["true", "head -1"])
@pytest.mark.parametrize("command", OFFLINE)
def test_a_reader_that_goes_away_is_not_an_error(work, env, command, reader):
    status, err = piped(command, reader, cwd=work, env=env)
    assert status == expected_code(command), err  # what the command found, whether or not it was read
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err
    if status != 2:
        assert err == ""


def expected_code(command: str) -> int:
    if "--jsn" in command:
        return 2  # a usage error stays one, even unread
    return 1 if command.startswith("compat doctor") else 0  # a minimal tree or 0.17.1 unpatched: a check fails


@pytest.mark.network
@pytest.mark.parametrize("command", [
    "compat probe --engine vllm==0.11.0 --json",  # the example: about 1 MB of JSON
    "compat probe --engine vllm==0.11.0",
    "compat patch --engine vllm==0.17.1 --dry-run",  # a big diff
    "compat doctor models/Kimi-K2-Instruct models/kimi-k2-eagle3 --engine vllm==0.17.1",
])
def test_large_outputs_of_real_releases_piped_to_head(work, command):
    status, err = piped(command, "head -1", cwd=work)
    assert status == expected_code(command) and err == "", err


def test_the_reader_sees_the_start_of_the_output(work, env):
    run = shell("set -o pipefail; compat probe --path tree --json | head -1", cwd=work, env=env)
    assert run.code == 0 and run.out == "{\n" and run.err == ""


@pytest.mark.network
def test_a_piped_probe_is_neither_wrapped_nor_padded():
    """Issue 33: into a pipe without $COLUMNS the summary's facts stay one line each, with no padding spaces."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    out = subprocess.run([str(COMPAT), "probe", "--engine", "vllm==0.11.0", "--full"], capture_output=True, text=True,
                         env=env, timeout=600).stdout
    lines = out.splitlines()
    assert lines and not [line for line in lines if line != line.rstrip()]
    gate = next(line for line in lines if line.startswith("EAGLE-3 gate"))
    assert "more)" in gate and gate.rstrip().endswith(".py:545")  # the fact and its source line, unwrapped
