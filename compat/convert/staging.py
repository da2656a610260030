"""The directories beside DST a conversion makes, who owns them, and the swap that puts DST in place.

Every such directory carries its owner in its name, made by one mkdir or rename (so no instant
exists at which it is unmarked): `.{DST}.compat-{kind}-{pid}.{start}.{boot}-{random}`, where start is
the owner's start time (clock ticks since boot, /proc/PID/stat) and boot the first 8 hex digits of
the kernel's boot id; pid + start + boot name one process, even after pid reuse or a reboot. Kinds:

    tmp   the output being written; right after an exchange, the previous DST. Stale: removed.
    old   the previous DST, moved aside whole by the fallback swap. Stale: put back as DST when DST
          is absent (the swap was cut between its two renames), else removed.
    del   being deleted. Stale: removed.

A stale directory is one whose owner is gone (no such process, a zombie, another start time or
boot); `recover_leftovers` handles them and says what it did. Directories of a running owner are
left alone.

The swap (`commit`): with --force and DST present, renameat2(RENAME_EXCHANGE) swaps the new
directory and DST in one step, so DST is the old or the new one at every instant. Where the kernel or
filesystem lacks it (not Linux, or EINVAL), the fallback is two renames (DST -> old, new -> DST);
between them DST is absent, and a kill there is undone by the next run (old -> DST). Without
--force, renameat2(RENAME_NOREPLACE) never replaces a DST that appeared meanwhile.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from compat.core.errors import RefusedError

KINDS = ("tmp", "old", "del")
_NAME_KEPT = 160  # of DST's name, inside NAME_MAX (255) with the marker
_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2
_AT_FDCWD = -100


def _proc_stat(pid: int | str) -> tuple[str, str] | None:
    """(state, start time) of a process from /proc, None when there is no such process (or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0].decode(), fields[19].decode()  # fields 3 (state) and 22 (starttime)


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip().replace("-", "")[:8] or "0" * 8
    except OSError:
        return "0" * 8


_HAS_PROC = os.path.isdir("/proc/self")
_SELF = _proc_stat("self")
OWNER_START = _SELF[1] if _SELF else "0"
BOOT = _boot_id()


def owner_token() -> str:
    return f"{os.getpid()}.{OWNER_START}.{BOOT}"


def _prefix(dst: Path) -> str:
    name = dst.name
    if len(name) > _NAME_KEPT:
        name = name[:_NAME_KEPT] + "~" + hashlib.sha256(dst.name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f".{name}.compat-"


def marked_name(dst: Path, kind: str) -> Path:
    return dst.parent / f"{_prefix(dst)}{kind}-{owner_token()}-{secrets.token_hex(4)}"


def make_staging(dst: Path) -> Path:
    """A new empty directory beside DST, owned by this process (mode as `mkdir` gives it under the umask)."""
    while True:
        path = marked_name(dst, "tmp")
        try:
            os.mkdir(path, 0o777)
            return path
        except FileExistsError:
            continue


@dataclass(frozen=True)
class Leftover:
    path: Path
    kind: str
    pid: int | None  # None: an unmarked directory (compat before owner markers)
    start: str = ""
    boot: str = ""

    @property
    def alive(self) -> bool:
        return self.pid is not None and owner_alive(self.pid, self.start, self.boot)


def owner_alive(pid: int, start: str, boot: str) -> bool:
    if boot != BOOT:
        return False
    if pid == os.getpid():
        return start == OWNER_START
    if _HAS_PROC:
        info = _proc_stat(pid)
        return info is not None and info[0] not in ("Z", "X") and info[1] == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def find_leftovers(dst: Path) -> list[Leftover]:
    prefix = _prefix(dst)
    marked = re.compile(r"(tmp|old|del)-(\d+)\.(\d+)\.([0-9a-f]{8})-[0-9a-f]{8}")
    legacy = re.compile(r"(tmp|old)-[a-z0-9_]{8}")  # tempfile.mkdtemp names of compat before markers
    found = []
    try:
        names = os.listdir(dst.parent)
    except FileNotFoundError:
        return []
    for name in sorted(names):
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix):]
        if m := marked.fullmatch(rest):
            found.append(Leftover(dst.parent / name, m.group(1), int(m.group(2)), m.group(3), m.group(4)))
        elif m := legacy.fullmatch(rest):
            found.append(Leftover(dst.parent / name, m.group(1), None))
    return found


def recover_leftovers(dst: Path, dry_run: bool = False) -> list[str]:
    """Remove (or put back) what killed conversions left beside DST; one message per directory."""
    messages = []
    changed = False
    for item in find_leftovers(dst):
        name = item.path.name
        if item.pid is None:
            messages.append(f"found {name}, left by an earlier compat version (no owner recorded): "
                            "remove it by hand when no conversion is running")
            continue
        if item.alive:
            messages.append(f"left {name}: its owner, process {item.pid}, is still running")
            continue
        who = f"left by process {item.pid}, which is gone"
        if item.kind == "old" and not os.path.lexists(dst):
            if dry_run:
                messages.append(f"would put back {name} as {dst.name} ({who}: a --force swap was cut between its renames)")
                continue
            try:
                rename_noreplace(item.path, dst)
            except FileExistsError:
                pass  # DST appeared meanwhile: the old copy is now only a leftover
            else:
                changed = True
                messages.append(f"put back {name} as {dst} ({who}: a --force swap was cut between its renames)")
                continue
        if dry_run:
            messages.append(f"would remove {name} ({who})")
            continue
        try:
            shutil.rmtree(item.path)
        except FileNotFoundError:
            continue  # another run removed it first
        except OSError as exc:
            messages.append(f"could not remove {name} ({who}): {exc.strerror or exc}")
            continue
        changed = True
        messages.append(f"removed {name} ({who}: {'a partial output' if item.kind == 'tmp' else 'a previous DST'})")
    if changed:
        fsync_dir(dst.parent)
    return messages


# ---------------------------------------------------------------------------------------------
# Renames


def _load_renameat2():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    function.restype = ctypes.c_int
    return function


_renameat2 = _load_renameat2()


def _rename2(src: Path, dst: Path, flags: int) -> bool:
    """renameat2; False when this system or filesystem does not offer it (the caller falls back)."""
    if _renameat2 is None:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(src), None, str(dst))


def rename_noreplace(src: Path, dst: Path) -> None:
    """Rename, raising FileExistsError rather than replacing an existing dst."""
    if _rename2(src, dst, _RENAME_NOREPLACE):
        return
    if os.path.lexists(dst):  # the fallback has a window between this test and the rename
        raise FileExistsError(errno.EEXIST, "File exists", str(dst))
    os.rename(src, dst)


def commit(tmp: Path, dst: Path, force: bool) -> Path | None:
    """Put the finished `tmp` in place as `dst`; returns the directory now holding the previous DST
    (marked `del`, for the caller to remove), or None when there was none."""
    try:
        rename_noreplace(tmp, dst)
        return None
    except FileExistsError:
        if not force:
            raise RefusedError(f"DST {dst} appeared during the conversion", hint="pass --force to replace it") from None
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        if not force:
            raise RefusedError(f"DST {dst} appeared during the conversion", hint="pass --force to replace it") from None
    doomed = marked_name(dst, "del")
    if _rename2(tmp, dst, _RENAME_EXCHANGE):  # atomic: DST is old or new at every instant
        os.rename(tmp, doomed)
        return doomed
    old = marked_name(dst, "old")  # fallback, two renames: a kill between them is undone by recover_leftovers
    os.rename(dst, old)
    try:
        os.rename(tmp, dst)
    except BaseException:
        os.rename(old, dst)
        raise
    os.rename(old, doomed)
    return doomed


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
