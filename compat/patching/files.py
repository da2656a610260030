"""The file operations a patch run is made of, each atomic, and what to tell the user when one fails.

Every replacement goes through a temp file `.<name>.XXXX.compat-tmp` beside the target (written,
fsynced, given the target's mode and owner, then renamed over it), so a reader sees the old or
the new file, never half of one; the temp files are the only litter a kill can leave, and
`remove_temp_files` finds them by that name.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from pathlib import Path

from compat.core import atomic
from compat.core.atomic import sync_directory  # noqa: F401  (journal.py imports it from here)
from compat.core.errors import RefusedError

from compat.patch_record import TEMP_SUFFIX  # noqa: E402  (one spelling: the record reader looks for it too)


def sha256(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def current_bytes(path: Path) -> bytes | None:
    """A file's bytes on disk now (never a tree's cache); None when it does not exist."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise RefusedError(f"{path}: cannot read it ({err.strerror or err}); nothing was changed",
                           hint="make it readable by this user (or run as the engine's owner), then run again") from None


def write_atomic(path: Path, data: bytes) -> None:
    """Replace (or create) `path` with `data` in one rename: the target's mode and (as root) owner kept,
    the temp file named `.<name>.XXXX.compat-tmp` so `remove_temp_files` finds a killed run's."""
    atomic.write_bytes(path, data, keep_mode=True, keep_owner=True, suffix=TEMP_SUFFIX)


def remove_file(path: Path) -> None:
    """Delete `path` (gone already is fine), durably."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    sync_directory(path.parent)


def bytecode_of(path: Path) -> list[Path]:
    """`__pycache__/<stem>.*.pyc` beside a module: every optimization level, any interpreter."""
    return sorted((path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"))


def drop_bytecode(path: Path) -> None:
    """Remove every cached bytecode of the module at `path`, before its source changes.

    An unchecked-hash pyc is never compared with its source, and a timestamp pyc only by mtime
    seconds and size (which a same-sized edit within one second keeps): only removing them all
    guarantees none can stand in for the new source.
    """
    removed = False
    for pyc in bytecode_of(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pyc)
            removed = True
    if removed:
        sync_directory(path.parent / "__pycache__")  # durable before the source changes, even across a power loss


def temp_files(path: Path) -> list[Path]:
    """The temp files a replacement of `path` may have left (`.<name>.XXXX.compat-tmp`)."""
    return sorted(path.parent.glob(f".{path.name}.*{TEMP_SUFFIX}"))


def temp_files_in(directory: Path) -> list[Path]:
    """Every compat temp file directly in `directory` (the record's and the journal's live in the package's)."""
    return sorted(directory.glob(f".*{TEMP_SUFFIX}"))


def remove_temp_files(path: Path, *, every_in_directory: bool = False) -> list[Path]:
    removed = []
    for leftover in temp_files_in(path) if every_in_directory else temp_files(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(leftover)
            removed.append(leftover)
    return removed


def check_writable(paths: list[Path], modules: list[Path]) -> None:
    """Refuse before any write: a link (replacing it would cut it, writing through it would patch
    another tree), or a file, its directory or its bytecode cache this user cannot change."""
    for path in paths:
        if path.is_symlink():
            raise RefusedError(
                f"{path} is a symbolic link (to {os.path.realpath(path)}); nothing was changed",
                hint="patch the tree it points to (--path DIR), or replace the link by a copy first",
            )
        for candidate in (path, path.parent):
            if candidate.exists() and not os.access(candidate, os.W_OK):
                raise not_writable(candidate)
    for module in modules:
        cache = module.parent / "__pycache__"
        if bytecode_of(module) and not os.access(cache, os.W_OK):
            raise not_writable(cache)


def not_writable(path: Path, err: OSError | None = None) -> RefusedError:
    try:
        owner = path.owner()
    except (KeyError, OSError, NotImplementedError):
        owner = "its owner"
    why = f" ({err.strerror})" if err is not None and err.strerror else ""
    return RefusedError(
        f"{path} is not writable{why}; nothing was changed",
        hint=f"run compat patch as the user that owns the engine's files ({owner}), e.g. with sudo -u {owner}, "
        "or, for an engine installed system-wide, with sudo; a read-only image needs a writable copy (--path DIR)",
    )


def os_error(err: OSError, path: Path, outcome: str = "nothing was changed") -> RefusedError:
    """One line naming the file and what to do, for any OSError of a write (never a traceback)."""
    named = str(err.filename) if isinstance(err.filename, (str, os.PathLike)) else ""
    where = Path(named) if named and not named.endswith(TEMP_SUFFIX) else path  # a temp file means its target
    if err.errno in (errno.EACCES, errno.EPERM):
        refusal = not_writable(where, err)
        return RefusedError(refusal.message.replace("nothing was changed", outcome), hint=refusal.hint)
    directory = where.parent
    hints: dict[int | None, str] = {
        errno.ENOSPC: f"the filesystem holding {directory} is full: free some space (a patch run needs about twice "
                      "the size of the files it replaces), then run again",
        errno.EDQUOT: f"your disk quota on {directory} is used up: free some of it, then run again",
        errno.EROFS: f"{directory} is on a read-only filesystem: remount it read-write, or patch a writable copy (--path DIR)",
        errno.EIO: "the disk or filesystem reported an I/O error: check it (dmesg, the device's health) before running again",
    }
    hint = hints.get(err.errno, "fix the cause above, then run again")
    return RefusedError(f"{where}: {err.strerror or err}; {outcome}", hint=hint)
