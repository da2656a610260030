"""Issue 40, point 9: the smaller things a new user met, each as they met it."""

from __future__ import annotations

import os
import shutil
import socket

import pytest

from cli_helpers import compat, engine_tree, file_index, isolated_env


def test_a_python_that_is_not_there_is_refused_beside_a_release(tmp_path, env):
    """It was accepted with --engine vllm==X and named in the printed fix. --offline on an empty cache: had doctor
    gone on, the release could not be had (3); the path is said first (2)."""
    assert compat("samples", tmp_path, env=env).code == 0
    run = compat("doctor", "Kimi-K2-Instruct", "kimi-k2-eagle3", "--engine", "vllm==0.17.1", "--python",
                 "./venv-serve/bin/python", "--offline", cwd=tmp_path, env=env)
    assert run.code == 2 and f"--python {tmp_path / 'venv-serve/bin/python'}: no such interpreter" in run.err, run.err


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_is_not_called_a_slow_index(tmp_path, env):
    run = compat("probe", "--engine", "vllm==0.20.0", "--index-url", f"http://127.0.0.1:{_closed_port()}/simple",
                 "--retries", "0", env=env)
    assert run.code == 3 and "connection refused" in run.err, run.err
    assert "nothing answers at 127.0.0.1:" in run.err and "slow" not in run.err and "--timeout" not in run.err


def test_latest_offline_is_the_newest_cached_release_when_no_listing_is(tmp_path):
    env = isolated_env(tmp_path, PIP_INDEX_URL=file_index(tmp_path / "index", {"vllm": ["0.20.0", "0.21.0"]}))
    for version in ("0.20.0", "0.21.0"):
        assert compat("probe", "--engine", f"vllm=={version}", "-q", env=env).code == 0
    listing = tmp_path / "xdg-cache" / "compat" / "index"
    shutil.rmtree(listing)  # a cache filled by pins on another machine, or cleaned of its listings
    run = compat("probe", "--engine", "vllm==latest", "--offline", env=env)
    assert run.code == 0 and run.out.startswith("vllm 0.21.0"), run.out + run.err
    assert "taken as the newest cached release, 0.21.0" in run.err


@pytest.mark.network
def test_explain_log_without_engine_reads_the_release_the_log_states(tmp_path, env, pinned_release):
    """The log says `vLLM API server version 0.11.0`: that is the release, not an exit 2 asking for --engine."""
    pinned_release("vllm", "0.11.0")
    log = tmp_path / "server.log"
    log.write_text("INFO 05-01 12:00:00 [api_server.py:1] vLLM API server version 0.11.0\nhello world\n")
    run = compat("explain", "--log", log, "--offline", cwd=tmp_path)
    assert run.code in (0, 1) and "against vllm 0.11.0" in run.out, run.out + run.err
    bare = tmp_path / "bare.log"
    bare.write_text("hello world\n")
    assert compat("explain", "--log", bare, "--offline", cwd=tmp_path).code == 2  # the control: a log that says nothing


def test_explain_on_a_terminal_indents_what_wraps_as_doctor_does(tmp_path, env):
    """Each field of a finding (`   site   ...`, `   cause  ...`) wraps under its text, not at column 0."""
    import fcntl
    import pty
    import select
    import struct
    import subprocess
    import termios

    from cli_helpers import COMPAT

    tree = engine_tree(tmp_path / "t")
    (tree / "vllm" / "config").mkdir()
    (tree / "vllm" / "config" / "speculative.py").write_text(
        "class SpeculativeConfig:\n    def _verify_args(self):\n"
        "        raise ValueError('Eagle3 is only supported here and only with a long explanation of why it is so')\n")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 60, 0, 0))
    proc = subprocess.Popen([str(COMPAT), "explain", "ValueError: Eagle3 is only supported here and only with a long "
                             "explanation of why it is so", "--path", str(tree)], stdout=slave, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env={**env, "NO_COLOR": "1", "COLUMNS": "60"})
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536) if select.select([master], [], [], 1)[0] else b""
        except OSError:
            break
        seen += chunk
        if not chunk and proc.poll() is not None:
            break
    proc.wait(timeout=120)
    lines = [line.rstrip() for line in seen.decode().replace("\r", "").splitlines()]
    site = next(i for i, line in enumerate(lines) if line.startswith("   site   "))
    assert lines[site + 1].startswith(" " * 10) and lines[site + 1].strip(), lines  # under the text, not at column 0
    first = next(i for i, line in enumerate(lines) if line.startswith("1. "))
    assert all(line.startswith(" ") for line in lines[first + 1:] if line), lines  # nothing of a finding at column 0
