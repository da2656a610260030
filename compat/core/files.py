"""Reading files of someone else's directory, and saying what went wrong with the disk.

An input directory (a drafter, a target model) may hold links and special files placed there by
anyone: a `config.json` that is a link to `/dev/zero` or a FIFO, a `tokenizer.json` that is a link to
a secret. Files are therefore opened only after their real path is resolved and found inside the
directory (or, for a Hugging Face cache snapshot `models--ORG--NAME/snapshots/REV`, inside that
repository's `blobs/`, where the snapshot's links point), with O_NOFOLLOW (the resolved path must not
have become a link since) and O_NONBLOCK (opening a FIFO does not wait for a writer), and only when
`fstat` of the open file says it is a regular file. JSON files are read up to a size limit.

Every OSError becomes a RefusedError with one line naming the file and errno, and a fix.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

from compat.core.errors import RefusedError

MAX_JSON_BYTES = 64 * 1024 * 1024  # a config or a safetensors index; the largest real index is a few MB

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))

_FIXES: dict[int | None, str] = {
    errno.ENOSPC: "free space on that filesystem or pick a DST on another one, then run again",
    errno.EDQUOT: "the disk quota is used up: free space or pick a DST elsewhere, then run again",
    errno.EFBIG: "a file size limit was reached (ulimit -f, or the filesystem's maximum): raise it, "
                 "pass a smaller --max-shard-size, or pick another DST",
    errno.EIO: "the device reported an I/O error: check the disk (dmesg), then run again",
    errno.EACCES: "check the permissions of that file and of its directory",
    errno.EPERM: "check the permissions and attributes (chattr) of that file and of its directory",
    errno.EROFS: "that filesystem is mounted read-only: pick a DST on a writable one",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.EMFILE: "too many open files: raise the limit (ulimit -n)",
    errno.ENFILE: "the system ran out of file handles: close programs or raise fs.file-max",
    errno.ENOENT: "a file or directory disappeared during the run: make sure nothing else changes it",
    errno.ELOOP: "the path is (or became) a symbolic link; pass the real file",
    errno.ENOTDIR: "a path component is not a directory",
    errno.ENOMEM: "the system is out of memory",
}


def refuse_os_error(exc: OSError, path: Path | str | None, doing: str) -> RefusedError:
    """One line naming the file, what was being done and the errno, with a fix for that errno."""
    where = exc.filename if exc.filename else path
    code = errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno is not None else type(exc).__name__
    reason = (exc.strerror or str(exc) or type(exc).__name__).replace("\n", " ")
    fix = _FIXES.get(exc.errno, "fix the cause above and run again")
    return RefusedError(f"{where}: {reason} [{code}] while {doing}", hint=fix)


def input_roots(directory: Path) -> tuple[Path, ...]:
    """Where the files of `directory` may really live: itself, and a HF cache snapshot's blobs/."""
    real = Path(os.path.realpath(directory))
    roots = [real]
    if real.parent.name == "snapshots" and real.parent.parent.name.startswith(("models--", "datasets--")):
        roots.append(real.parent.parent / "blobs")
    return tuple(roots)


def resolve_inside(path: Path, roots: tuple[Path, ...]) -> Path:
    """The real path of `path`, refused when a link takes it out of `roots`."""
    real = Path(os.path.realpath(path))
    if not any(real == root or real.is_relative_to(root) for root in roots):
        raise RefusedError(f"{path}: a link to {real}, outside {roots[0]}: not read",
                           hint=f"copy the file itself into {roots[0]} (links out of the input are never followed)")
    return real


def open_regular(path: Path, roots: tuple[Path, ...], doing: str) -> tuple[int, Path, os.stat_result]:
    """(fd, real path, stat) of a regular file inside `roots`; FileNotFoundError passes through."""
    real = resolve_inside(path, roots)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise refuse_os_error(exc, path, doing) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
        shown = f"{path}" if Path(path) == real else f"{path} (-> {real})"
        raise RefusedError(f"{shown} is {kind}, not a regular file: not read",
                           hint="replace it with the real file (only regular files are read)")
    return fd, real, info


def regular_file(path: Path, roots: tuple[Path, ...], doing: str) -> tuple[Path, os.stat_result]:
    """Check `path` as open_regular does; returns its real path and stat."""
    fd, real, info = open_regular(path, roots, doing)
    os.close(fd)
    return real, info


def read_json(path: Path, roots: tuple[Path, ...], what: str, limit: int = MAX_JSON_BYTES) -> object:
    """Parse a JSON file read through open_regular, at most `limit` bytes, with one-line errors."""
    fd, _, info = open_regular(path, roots, f"reading {what}")
    try:
        if info.st_size > limit:
            raise RefusedError(f"{path}: {info.st_size} bytes, more than the {limit}-byte limit for {what}",
                               hint=f"this is not {what}; pass the right file")
        chunks, total = [], 0
        while True:
            try:
                chunk = os.read(fd, 1 << 20)
            except OSError as exc:
                raise refuse_os_error(exc, path, f"reading {what}") from None
            if not chunk:
                break
            total += len(chunk)
            if total > limit:  # grew while being read
                raise RefusedError(f"{path}: more than the {limit}-byte limit for {what}", hint="pass the right file")
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        return json.loads(b"".join(chunks).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RefusedError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}), so not {what}") from None
    except RecursionError:
        raise RefusedError(f"{path}: JSON nested too deeply to be {what}") from None
    except ValueError as exc:  # JSONDecodeError, and int literals beyond Python's digit limit
        raise RefusedError(f"{path}: not valid JSON ({str(exc).splitlines()[0][:200]})", hint=f"{what} must be a JSON object") from None


def writable_folder(folder: Path, flag: str, example: str) -> None:
    """Refuse, before any work, an output folder that cannot be made or written into: a file where a folder of its
    path should be, or a folder this user may not write (what root is never refused, the others are). `flag` names
    the input (`DIR`, `--out`); `example` is a command that names a folder the user can write."""
    folder = Path(folder)
    ancestor = folder
    while not ancestor.exists() and not ancestor.is_symlink() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        what = ": a file, not a directory" if ancestor == folder else f" cannot be made: {ancestor} is a file, not a directory"
        raise RefusedError(f"{flag} {folder}{what}; nothing was written", hint=f"name a directory: {example}")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        why = "this user may not write into it" if ancestor == folder else \
            f"cannot be made in {ancestor}, which this user may not write into"
        raise RefusedError(f"{flag} {folder}: {why}; nothing was written", hint=f"name a directory you can write: {example}")
