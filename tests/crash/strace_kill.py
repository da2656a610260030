"""Kill a command at its N-th write-like system call, or after a delay: the crash-injection harness.

`strace -e inject=...:signal=KILL:when=N` delivers SIGKILL to the process at the N-th call of any
syscall in the set (one counter across the set), before the call runs. Walking N = 1, 2, ... until
a run completes reaches every instant at which a write, rename, fsync or unlink could be cut off,
which is where a half-done patch or conversion could be left behind. No product code knows about it.

    for n, proc in kill_points(argv):      # proc.returncode is KILLED for every n but the last
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


def kill_points(argv: list[str], *, start: int = 1, step: int = 1, limit: int = 100_000, **kwargs
                ) -> Iterator[tuple[int, subprocess.CompletedProcess]]:
    """Yield (n, result) for n = start, start + step, ... until a run is not killed (that one included)."""
    n = start
    while n <= limit:
        proc = run_killed_at(argv, n, **kwargs)
        yield n, proc
        if not was_killed(proc):
            return
        n += step
    raise AssertionError(f"{argv} was still being killed at syscall {limit}")


def count_write_calls(argv: list[str], **kwargs) -> int:
    """How many write-like calls a normal run makes (to spread a fixed number of kill points over it)."""
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
    total = [line for line in lines if line.strip().endswith("total")]
    return int(total[0].split()[3]) if total else 0  # % time, seconds, usecs/call, calls, [errors,] total


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
