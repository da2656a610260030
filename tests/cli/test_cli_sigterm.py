"""Issue 33, item 5: SIGTERM (a CI job cancelled, `kill PID`, `timeout`) ends every command as Ctrl-C does: what was
half done is undone, one line, exit 130, no traceback. Mid-run for real: strace delivers the signal at a chosen
system call (the swap's rename, the output's fsync), or it is sent once the command says it is fetching."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import COMPAT, compat

pytestmark = [pytest.mark.strace, pytest.mark.network]  # pinned releases (tests/releases.json), cached


def _under_strace(argv: list[str], syscalls: str, n: int, cwd: Path) -> subprocess.CompletedProcess:
    """`compat ARGV`, sent SIGTERM by strace at the n-th call of `syscalls` (before the call runs)."""
    cmd = ["strace", "-f", "-qq", "-o", os.devnull, "-e", f"trace={syscalls}", "-e",
           f"inject={syscalls}:signal=TERM:when={n}", str(COMPAT), *argv]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=600)


def _terminated_when(argv: list[str], said: str, cwd: Path) -> tuple[int, str]:
    """`compat ARGV`, sent SIGTERM as soon as its stderr says `said`; (exit code, stderr)."""
    proc = subprocess.Popen([str(COMPAT), *argv], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if said in line:
            proc.send_signal(signal.SIGTERM)
            break
    rest = proc.stderr.read()
    return proc.wait(timeout=120), "".join(seen) + rest


def _interrupted(code: int, err: str) -> None:
    assert code == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "error: interrupted (SIGTERM)", err
    assert err.count("interrupted") == 1, err


def _digest(tree: Path) -> dict[str, str]:
    return {str(p.relative_to(tree)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(tree.rglob("*"))
            if p.is_file()}


def test_convert_terminated_at_its_fsync_leaves_no_output(tmp_path):
    compat("samples", tmp_path)
    samples = sorted(p.name for p in tmp_path.iterdir())
    argv = ["convert", "ckpt", "kimi-k2-eagle3", "out", "--to", "vllm", "--engine", "vllm==0.22.0",
            "--target", "Kimi-K2-Instruct"]
    run = _under_strace(argv, "fsync", 1, tmp_path)
    _interrupted(run.returncode, run.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == samples  # no DST, no staging folder


def test_patch_terminated_between_its_renames_leaves_the_tree_as_it_was(tmp_path, pinned_release):
    shutil.copytree(pinned_release("vllm", "0.17.1").root / "vllm", tmp_path / "tree" / "vllm")
    before = _digest(tmp_path / "tree")
    run = _under_strace(["patch", "--path", "tree"], "rename,renameat2", 2, tmp_path)
    _interrupted(run.returncode, run.stderr)
    assert _digest(tmp_path / "tree") == before  # every file as it was, nothing added (no record, no backup)


@pytest.mark.parametrize("command, said", [
    (["doctor", "Kimi-K2.5", "kimi-k25-eagle3-ft", "--engine", "vllm==0.15.0"], "fetching"),
    (["matrix", "--engine", "vllm", "--releases", "vllm:==0.15.0", "--target", "Kimi-K2.5", "--drafter",
      "kimi-k25-eagle3-ft", "--family", "kimi-k2", "--kind", "specforge", "--format", "md"], "releases: 1 to do"),
], ids=["doctor", "matrix"])
def test_a_cold_run_terminated_while_fetching_leaves_no_release_half_fetched(tmp_path, command, said):
    compat("samples", tmp_path)
    cache = tmp_path / "cache"
    code, err = _terminated_when([*command, "--cache-dir", str(cache)], said, tmp_path)
    _interrupted(code, err)
    listed = compat("cache", "list", "--cache-dir", str(cache), "--json").json()
    assert listed["releases"] == [], listed  # no release folder left, complete or not
    assert not list((cache / "releases").rglob("*.py")) if (cache / "releases").exists() else True
