"""Issue 12, point 6: -q / -v / --color as global options (NO_COLOR and FORCE_COLOR honoured); into a pipe
output never wraps (a long path stays on one line, whole), on a terminal long details wrap with a hanging
indent. Terminals are real pseudo-terminals of a fixed width."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios

import pytest

from cli_helpers import COMPAT, compat, engine_tree, kimi_pair

ESC = "\x1b["


@pytest.fixture
def deep(tmp_path):
    """A target and drafter under a 150-character directory path, and a tree: doctor prints the path whole."""
    base = tmp_path / ("a-rather-long-directory-name-for-models-" * 4).rstrip("-")
    target, drafter = kimi_pair(base)
    engine_tree(tmp_path / "tree")
    return tmp_path, target, drafter


def on_terminal(argv: list[str], *, cwd, env, columns: int = 80) -> str:
    """What `compat ARGV` shows on a terminal `columns` wide (a pseudo-terminal; stderr discarded)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen([str(COMPAT), *map(str, argv)], stdin=slave, stdout=slave, stderr=subprocess.DEVNULL,
                            cwd=cwd, env={k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")})
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    proc.wait(timeout=120)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_into_a_pipe_nothing_wraps(deep, env):
    work, target, drafter = deep
    run = compat("doctor", target, drafter, "--path", "tree", "--offline", "--detail", cwd=work, env=env)
    assert run.code == 1
    lines = run.out.splitlines()
    assert any(f"  target  {target}  model_type=kimi_k2" in line for line in lines)  # the whole path, one line
    assert max(len(line) for line in lines) > 200  # and nothing cut it at a fixed width
    assert [line for line in lines if line.startswith("     fix: ")]  # one line per fix, each whole
    assert ESC not in run.out  # a pipe gets no colour


def test_on_a_terminal_long_details_wrap_under_their_first_line(deep, env):
    work, target, drafter = deep
    screen = on_terminal(["--color", "never", "doctor", target, drafter, "--path", "tree", "--offline", "-v"], cwd=work,
                         env=env)
    lines = screen.split("\nverdict:")[0].splitlines()  # the checks (launch commands stay whole, to copy)
    assert lines and max(len(line.rstrip()) for line in lines) <= 80
    for i, line in enumerate(lines):
        if line.startswith("     fix: no compat patch or conversion fixes this here"):
            continued = lines[i + 1]
            assert continued.startswith(" " * 10) and continued.strip()  # under the text after "fix: "
            break
    else:
        raise AssertionError(screen)
    assert ESC not in screen  # --color never, even on a terminal


def test_one_line_per_check_on_a_terminal_and_in_a_pipe(deep, env):
    """Issue 33, item 3: a verdict, the check, the fact and where its fix is, one line each; the reasons under -v."""
    work, target, drafter = deep
    screen = on_terminal(["--color", "never", "doctor", target, drafter, "--path", "tree", "--offline"], cwd=work, env=env)
    checks = [line for line in screen.splitlines() if line[:5] in ("PASS ", "FAIL ", "WARN ")]
    assert checks and all(len(line.rstrip()) <= 80 for line in checks), screen  # each fits the 80-column terminal
    assert not [line for line in screen.splitlines() if line.startswith("     fix: ")]  # folded: under -v
    piped = compat("doctor", target, drafter, "--path", "tree", "--offline", cwd=work, env=env)
    detailed = compat("doctor", target, drafter, "--path", "tree", "--offline", "--detail", cwd=work, env=env)
    lines = piped.out.split("\nlaunch")[0].splitlines()
    ids = [line.split()[1] for line in lines if line[:5] in ("PASS ", "FAIL ", "WARN ")]
    assert len(ids) == len([line for line in detailed.out.splitlines() if line[:5] in ("PASS ", "FAIL ", "WARN ")])
    assert all(len(line) < 200 and line == line.rstrip() for line in lines if "a-rather-long" not in line), lines
    assert any("(no compat patch or conversion fixes this here: -v" in line for line in lines)
    assert piped.out.split("\nverdict:")[1] == detailed.out.split("\nverdict:")[1]  # the verdict, fixes, launch: alike
    as_json = compat("doctor", target, drafter, "--path", "tree", "--offline", "--json", cwd=work, env=env).json()
    assert [c["check"] for c in as_json["checks"]] == ids and all(c["detail"] for c in as_json["checks"])


def test_colour_on_a_terminal_and_the_switches_that_change_it(deep, env):
    work, target, drafter = deep
    argv = ["doctor", target, drafter, "--path", "tree", "--offline"]
    assert ESC in on_terminal(argv, cwd=work, env=env)
    assert ESC not in on_terminal(argv, cwd=work, env={**env, "NO_COLOR": "1"})
    assert ESC in on_terminal(["--color", "always", *argv], cwd=work, env={**env, "NO_COLOR": "1"})  # the flag wins
    assert ESC in compat(*argv, env={**env, "FORCE_COLOR": "1"}, cwd=work).out  # forced, even into a pipe
    assert ESC in compat(*argv, "--color", "always", env=env, cwd=work).out
    assert ESC not in compat(*argv, "--color", "never", env={**env, "FORCE_COLOR": "1"}, cwd=work).out


def test_quiet_and_very_quiet(deep, env):
    work, target, drafter = deep
    full = compat("doctor", target, drafter, "--path", "tree", "--offline", cwd=work, env=env)
    quiet = compat("-q", "doctor", target, drafter, "--path", "tree", "--offline", cwd=work, env=env)
    silent = compat("doctor", target, drafter, "--path", "tree", "--offline", "-qq", cwd=work, env=env)
    assert full.code == quiet.code == silent.code == 1  # the same verdict
    assert "\nPASS " not in quiet.out and "\nFAIL " in quiet.out and "verdict: does not work" in quiet.out
    assert "\nPASS " in full.out or "\nWARN " in full.out
    assert silent.out == "" and silent.err == ""
    error = compat("-qq", "probe", "--path", work / "missing", env=env)
    assert error.code == 2 and "no such directory" in error.err  # errors are never silenced (a path naming nothing: 2)


def test_verbose_says_where_and_how_long(env, tmp_path):
    (tmp_path / "not-a-tree").mkdir()
    run = compat("probe", "--path", tmp_path / "not-a-tree", "-v", env=env)
    assert run.code == 3 and "(raised at " in run.err and "SourceError" in run.err
    assert "compat probe: exit 3 in " in run.err
