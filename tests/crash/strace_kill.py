"""Kill a command at its N-th write-like system call, or after a delay: the crash-injection harness.

`strace -e inject=SYSCALL:signal=KILL:when=N` delivers SIGKILL to the process at the N-th call of
SYSCALL, before the call runs. strace keeps one counter per syscall (with a set, the first syscall of
the set to reach N fires), so the harness injects one syscall at a time: for each write-like syscall,
N = 1, 2, ... until a run completes. That reaches every instant at which a write, rename, fsync or
unlink could be cut off, which is where a half-done patch or conversion could be left behind. No
product code knows about it.

    for point, proc in kill_points(argv):   # point is "rename#1"; proc.returncode is KILLED but for the last of each
        check_the_tree_recovers()
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from typing import Iterator

# Every call that changes what is on disk (or commits it).
WRITE_SYSCALLS = ("write", "pwrite64", "writev", "pwritev", "rename", "renameat", "renameat2", "fsync",
                  "fdatasync", "unlink", "unlinkat", "ftruncate", "copy_file_range", "sendfile", "mkdir",
                  "mkdirat", "rmdir", "chmod", "fchmod", "fchmodat", "link", "linkat", "symlink", "symlinkat")
KILLED = -signal.SIGKILL


def available() -> bool:
    return shutil.which("strace") is not None


def _env(env: dict | None) -> dict:
    out = dict(os.environ if env is None else env)
    out.setdefault("PYTHONDONTWRITEBYTECODE", "1")  # the interpreter's own pyc writes are not the command's
    return out


def was_killed(proc: subprocess.CompletedProcess) -> bool:
    return proc.returncode in (KILLED, 128 + signal.SIGKILL)


def run_killed_at(argv: list[str], n: int, *, syscalls=WRITE_SYSCALLS, env: dict | None = None, cwd=None,
                  timeout: float = 300) -> subprocess.CompletedProcess:
    """Run argv under strace, SIGKILLed at the n-th call of `syscalls` (it may finish first)."""
    names = ",".join(syscalls)
    cmd = ["strace", "-f", "-qq", "-o", os.devnull, "-e", f"trace={names}",
           "-e", f"inject={names}:signal=KILL:when={n}", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, env=_env(env), cwd=cwd, timeout=timeout)


def kill_points(argv: list[str], *, syscalls=WRITE_SYSCALLS, counts: dict[str, int] | None = None, step: int = 1,
                limit: int = 100_000, **kwargs) -> Iterator[tuple[str, subprocess.CompletedProcess]]:
    """Yield ("rename#2", result) for every call of every syscall of `syscalls` a normal run makes (every
    `step`-th), each killed run followed by the recovery the caller checks. `counts` (from count_calls)
    skips syscalls the run never makes."""
    counts = count_calls(argv, syscalls=syscalls, **kwargs) if counts is None else counts
    for syscall in syscalls:
        total = counts.get(syscall, 0)
        for n in range(1, min(total, limit) + 1, step):
            yield f"{syscall}#{n}", run_killed_at(argv, n, syscalls=(syscall,), **kwargs)


def count_write_calls(argv: list[str], **kwargs) -> int:
    """How many write-like calls a normal run makes (to spread a fixed number of kill points over it)."""
    return sum(count_calls(argv, **kwargs).values())


def count_calls(argv: list[str], **kwargs) -> dict[str, int]:
    """Calls per syscall of a normal run: {"write": 12, "rename": 3, ...}."""
    names = ",".join(kwargs.pop("syscalls", WRITE_SYSCALLS))
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"strace-count-{os.getpid()}-{time.monotonic_ns()}")
    try:
        subprocess.run(["strace", "-f", "-qq", "-c", "-o", out, "-e", f"trace={names}", *argv],
                       capture_output=True, text=True, env=_env(kwargs.get("env")), cwd=kwargs.get("cwd"),
                       timeout=kwargs.get("timeout", 300))
        lines = open(out).read().splitlines()
    finally:
        if os.path.exists(out):
            os.unlink(out)
    out = {}
    for line in lines:  # % time, seconds, usecs/call, calls, [errors,] syscall
        parts = line.split()
        if len(parts) >= 5 and parts[-1] != "total" and parts[3].isdigit():
            out[parts[-1]] = int(parts[3])
    return out


def run_killed_after(argv: list[str], delay: float, *, env: dict | None = None, cwd=None,
                     timeout: float = 300) -> subprocess.CompletedProcess:
    """Start argv and SIGKILL it after `delay` seconds (or let it finish first)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(env), cwd=cwd)
    try:
        out, err = proc.communicate(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
