"""Replacing a file whole or not at all: the one atomic writer every part of compat uses.

A temp file `.<name>.XXXX<suffix>` is made beside the target (same folder, so the rename stays on one
filesystem), the bytes are written, the file is given its mode (the replaced file's when `keep_mode`,
else `mode`) and, for root keeping a user's file, its owner, fsynced, closed and renamed over the
target; then the folder is fsynced so the rename survives a power cut. A reader sees the old file or
the new one, never half of one. On any failure (an OSError, Ctrl-C) the temp file is removed and the
old file is left as it was. The os calls are made in that order (write, fchmod, fchown, fsync, close,
rename, the folder's fsync): tests/crash/ counts them.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

DEFAULT_MODE = 0o644


def write_bytes(path: Path | str, data: bytes, *, keep_mode: bool = True, mode: int = DEFAULT_MODE,
                keep_owner: bool = False, suffix: str = "", parents: bool = False) -> None:
    """Replace (or create) `path` with `data` in one rename.

    keep_mode: an existing file keeps its permission bits; `mode` is for a new file (or every file when False).
    keep_owner: when run as root, the new file keeps the replaced file's owner and group.
    suffix: the temp file's name ends with it (a caller that sweeps leftovers finds them by it).
    parents: make the missing folders above `path` first.
    """
    path = Path(path)
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    st = _stat(path) if keep_mode or keep_owner else None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, (st.st_mode & 0o7777) if keep_mode and st is not None else mode)
            if keep_owner and st is not None and hasattr(os, "geteuid") and os.geteuid() == 0 \
                    and (st.st_uid, st.st_gid) != (0, 0):
                with contextlib.suppress(OSError):
                    os.fchown(fd, st.st_uid, st.st_gid)  # root patching a user's venv keeps the user's files
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    sync_directory(path.parent)


def write_text(path: Path | str, text: str, *, encoding: str = "utf-8", keep_mode: bool = True,
               mode: int = DEFAULT_MODE, keep_owner: bool = False, suffix: str = "", parents: bool = False) -> None:
    """`write_bytes` of `text` encoded (UTF-8 unless told); newlines are written as given."""
    write_bytes(path, text.encode(encoding), keep_mode=keep_mode, mode=mode, keep_owner=keep_owner, suffix=suffix,
                parents=parents)


def sync_directory(directory: Path | str) -> None:
    """Make a rename or unlink in `directory` durable (some filesystems cannot: that is not an error)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None
