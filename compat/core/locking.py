"""One compat run at a time on a directory: an flock on the directory itself, waited for (bounded), and the
pid of the run that holds it named when it is not released in time.

`compat patch` locks the engine's package directory (compat/patching/journal.py), `compat plugin install`
and `remove` the serving environment's site-packages (compat/plugin/dist.py). Locking the directory
leaves no lock file behind, and the kernel releases the lock when its holder dies, however it dies. The
holder is found in /proc/locks (Linux: the lock's device and inode, the pid that took it); elsewhere the
message just says "another compat run".
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from typing import Callable, Iterator

from compat.core.errors import RefusedError

POLL_S = 0.05
PROC_LOCKS = Path("/proc/locks")


def holder_pids(fd: int, proc_locks: Path = PROC_LOCKS) -> list[int]:
    """Pids holding (not waiting for) an flock on the file open as `fd`; [] when that cannot be told."""
    try:
        st = os.fstat(fd)
        table = proc_locks.read_text(encoding="ascii", errors="replace")
    except OSError:
        return []
    where = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    pids = []
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 6 or "->" in fields or fields[1] != "FLOCK":
            continue  # a waiter ("1: -> FLOCK ...") or a POSIX lock
        try:
            major, minor, inode = fields[5].split(":")
            found = (int(major, 16), int(minor, 16), int(inode))
            pid = int(fields[4])
        except ValueError:
            continue
        if found == where and pid != os.getpid():
            pids.append(pid)
    return sorted(set(pids))


def who(fd: int, what: str) -> str:
    """"another compat patch run (pid 1234)", or without the pid when it cannot be told."""
    pids = holder_pids(fd)
    return f"another {what} run" + (f" (pid {', '.join(map(str, pids))})" if pids else "")


@contextlib.contextmanager
def directory_lock(directory: Path, *, what: str, timeout: float, shared: bool = False,
                   notify: Callable[[str], None] | None = None, unlockable_ok: bool = False) -> Iterator[None]:
    """Hold an flock on `directory` (exclusive, or `shared` for readers) for the `with` block.

    Waits up to `timeout` seconds for another holder, telling `notify` once who it waits for; then
    refuses naming that run's pid. `what` is the run's name in messages ("compat patch").
    `unlockable_ok`: a filesystem without flock leaves the caller unlocked instead of refusing.
    """
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError as err:
        raise RefusedError(f"{directory}: cannot open it ({err.strerror}); nothing was changed",
                           hint="point the command at a directory this user can read") from None
    try:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            except OSError as err:
                if unlockable_ok:
                    break
                raise RefusedError(f"{directory}: cannot lock it ({err.strerror}); nothing was changed",
                                   hint="work on a copy on a local filesystem") from None
            if time.monotonic() >= deadline:
                holder = who(fd, what)
                raise RefusedError(
                    f"{holder} holds {directory} (waited {timeout:g} s); nothing was changed",
                    hint="let it finish, then run again"
                    + (" (if that process is stuck, stop it: the kernel releases its lock when it exits)" if "pid" in holder else ""),
                ) from None
            if notify and not told:
                notify(f"waiting for {who(fd, what)} on {directory} (up to {timeout:g} s) ...")
                told = True
            time.sleep(POLL_S)
        yield
    finally:
        os.close(fd)  # closing releases the lock
