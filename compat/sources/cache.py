"""The user cache of released trees: its layout, one release's entry (folder, record, lock), atomic writes.

Layout under `cache_root()` (this module is the only one that spells it):

    releases/<engine>/<version>/<engine>/**.py   the package's Python files
    releases/<engine>/<version>/release.json     the record: artifact, index, sha256, when (written last)
    releases/<engine>/.tmp-<version>-*/          a release being built (renamed into place when done)
    index/<engine>.json                          the last index listing (see index.py)
    locks/<engine>-<version>.lock                one flock per release
    facts/                                       probe answers of --path trees and installed engines (compat/facts.py)

A release folder without its record is incomplete (a fetch was killed) and is never handed out.
Nothing here touches the network; a cached `==X.Y.Z` is answered from this module alone, without
even importing `packaging` (`cached_release`), so a warm `compat probe --engine vllm==0.32.0` starts fast.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from compat import engines
from compat.core.tree import EngineTree, SourceInfo

TYPE_CHECKING = False  # neither typing nor packaging is imported on the way to a cached pin
if TYPE_CHECKING:
    from collections.abc import Iterator

    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    from compat.core.errors import SourceError
    from compat.sources.progress import Progress

__all__ = [
    "RECORD_NAME", "OWN_ENTRIES", "cache_root", "atomic_write", "CacheEntry", "cached_versions", "cached_pin",
    "plain_pin", "cached_release", "listing_path", "listing_files", "ReleaseFolder", "release_folders", "tree_size",
    "cache_size", "facts_dirs", "cache_os_error", "within_cache",
]

RECORD_NAME = "release.json"
OWN_ENTRIES = ("facts", "index", "locks", "releases", "matrix", "fleet")  # what compat keeps in the cache folder
# (matrix: compat matrix's cells and templates; fleet: the bundles fleet mode uploads); nothing else is removed
_BUILDING = ".tmp-"  # prefix of a release being built: `.tmp-<version>-<random>`


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """`cache_dir`, else `$XDG_CACHE_HOME/compat`, else `~/.cache/compat` (not created here)."""
    if cache_dir:
        return Path(cache_dir).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "compat"
    return Path.home() / ".cache" / "compat"


def atomic_write(path: Path, text: str) -> None:
    """Write `text` beside `path`, then rename it over `path`: a reader sees old or new, never half.
    Cache files stay readable by their owner only (mode 0o600), as they always were."""
    from compat.core.atomic import write_text  # only writers pay for tempfile (start-up of a cached probe reads only)

    write_text(path, text, keep_mode=False, mode=0o600, parents=True)


def cache_os_error(err: OSError, cache: Path, doing: str) -> SourceError:
    """The cache failing this user (no permission, a full disk, read-only): one line naming the file, with the fix
    for that cause (a permission is not fixed by freeing space)."""
    import errno

    from compat.core.errors import SourceError

    where = err.filename or cache
    reason = err.strerror or str(err) or type(err).__name__
    elsewhere = "or use another cache: --cache-dir DIR (or XDG_CACHE_HOME)"
    if err.errno in (errno.EACCES, errno.EPERM):
        hint = f"this user may not use the cache {cache}: give it back (sudo chown -R $(id -un) {cache}) {elsewhere}"
    elif err.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = f"free some space on the cache's disk (compat cache clean) {elsewhere}"
    elif err.errno == errno.EROFS:
        hint = f"the cache is on a read-only filesystem: {elsewhere[3:]}"
    else:
        hint = f"fix the cause above {elsewhere}"
    return SourceError(f"cannot use the cache {cache} while {doing}: {where}: {reason}", hint=hint)


def within_cache(err: OSError, cache: Path) -> bool:
    """True when the file `err` names is in the cache (a folder of it this user may not read, ...)."""
    names = [n for n in (err.filename, getattr(err, "filename2", None)) if n]
    root = os.path.abspath(cache)
    return any(os.path.abspath(os.fsdecode(n)) == root or os.path.abspath(os.fsdecode(n)).startswith(root + os.sep)
               for n in names)


def _releases(cache: Path, engine: str) -> Path:
    return cache / "releases" / engine


def listing_path(cache: Path, engine: str) -> Path:
    """Where index.py keeps the last listing of `engine`."""
    return cache / "index" / f"{engine}.json"


def listing_files(cache: Path) -> list[Path]:
    folder = cache / "index"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


# -- one release ------------------------------------------------------------------------------------------


def _read_record(folder: Path) -> dict | None:
    try:
        record = json.loads((folder / RECORD_NAME).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


@dataclass(frozen=True)
class CacheEntry:
    """One release's place in the cache: its folder, its record and its lock. Settled once, then asked."""

    cache: Path
    engine: str
    version: str  # the folder name (the version the index lists)

    @property
    def path(self) -> Path:
        return _releases(self.cache, self.engine) / self.version

    @property
    def lock_path(self) -> Path:
        return self.cache / "locks" / f"{self.engine}-{self.version}.lock"

    def record(self) -> dict | None:
        """release.json; None when missing or unreadable (an incomplete tree)."""
        return _read_record(self.path)

    def is_complete(self) -> bool:
        return (self.path / self.engine / "__init__.py").is_file() and self.record() is not None

    def tree(self, *, cached: bool, downloaded: int = 0) -> EngineTree:
        """The EngineTree of this release, its `source` detail taken from the record."""
        record = self.record() or {}
        detail = {
            "artifact": record.get("artifact"), "index": record.get("index"), "cached": cached,
            "url": record.get("url"), "sha256": record.get("sha256"), "verified": record.get("verified"),
            "fetched_at": record.get("fetched_at"), "downloaded_bytes": downloaded,
        }
        if record.get("ranged"):
            detail["range_requests"] = record.get("range_requests")
        version = record.get("version") or self.version
        return EngineTree(self.engine, self.path, version, SourceInfo("released", str(self.path), detail))

    def damage(self) -> str | None:
        """What is wrong with this complete release against its manifest, or None (checked once per process)."""
        from compat.sources.manifest import check_manifest

        return check_manifest(self.path, (self.record() or {}).get("manifest"))

    @contextlib.contextmanager
    def lock(self, progress: Progress | None = None) -> Iterator[None]:
        """An exclusive flock per release; another process waits here, then finds the release cached.

        The holder's pid is written into the lock file so a waiter can name it; a lock left by a killed
        process is free again (the kernel releases a dead process's flock) and the next fetch takes it."""
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if progress is not None:
                    handle.seek(0)
                    holder = handle.read(32).strip() or "?"
                    progress.waiting(f"another compat (pid {holder}) is fetching {self.engine} {self.version} into {self.cache}")
                fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                os.ftruncate(handle.fileno(), 0)
                os.write(handle.fileno(), f"{os.getpid()}\n".encode())
                yield
            finally:
                with contextlib.suppress(OSError):
                    os.ftruncate(handle.fileno(), 0)
                fcntl.flock(handle, fcntl.LOCK_UN)

    def lock_held(self) -> bool:
        """True when another process holds the release's lock now (a fetch in progress). Creates nothing."""
        try:
            handle = open(self.lock_path)
        except OSError:
            return False
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
        return False

    def remove(self, folder: Path | None = None) -> bool:
        """Remove the release folder (or `folder`, a build folder of it) under the lock; False when another run holds it.

        The folder is renamed first: a run looking for the release finds it whole or not at all."""
        folder = folder or self.path
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            try:
                doomed = folder.with_name(f".removing-{folder.name}-{os.getpid()}")
                try:
                    os.rename(folder, doomed)
                except FileNotFoundError:
                    return True
                shutil.rmtree(doomed, ignore_errors=True)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return True


# -- which cached release a specifier picks ---------------------------------------------------------------


def _versions_on_disk(cache: Path, engine: str) -> list[tuple[Version, CacheEntry]]:
    """(version, entry) of every folder named like a version, ascending; complete or not."""
    from packaging.version import InvalidVersion, Version

    folder = _releases(cache, engine)
    found = []
    for entry in folder.iterdir() if folder.is_dir() else ():
        if entry.name.startswith("."):
            continue
        try:
            found.append((Version(entry.name), CacheEntry(cache, engine, entry.name)))
        except InvalidVersion:
            continue
    return sorted(found, key=lambda item: item[0])


def cached_versions(cache: Path, engine: str) -> list[str]:
    """The complete releases in the cache, ascending."""
    return [str(version) for version, entry in _versions_on_disk(cache, engine) if entry.is_complete()]


def cached_pin(cache: Path, engine: str, spec: SpecifierSet) -> CacheEntry | None:
    """The highest complete cached release that `spec` matches (only the matching ones are checked)."""
    for version, entry in reversed(_versions_on_disk(cache, engine)):
        if spec.contains(version, prereleases=True) and entry.is_complete():
            return entry
    return None


# The fast path for `==X.Y.Z`: a plain release pin can only match folders named by the same release
# numbers (0.32 == 0.32.0) or by that release with a local label; pre-, post- and dev-releases never
# match it. When the folder names leave no doubt, the answer needs no `packaging` (milliseconds at start-up).
_PLAIN_PIN = re.compile(r"^\s*==\s*(\d+(?:\.\d+)*)\s*$")
_PLAIN = re.compile(r"^\d+(?:\.\d+)*$")
_NOT_A_PLAIN_MATCH = re.compile(r"^\d+(?:\.\d+)*(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?$")


def plain_pin(specifier: str | None) -> str | None:
    """"0.32.0" for "==0.32.0"; None for anything else (ranges, wildcards, pre-releases, `latest`)."""
    match = _PLAIN_PIN.match(specifier or "")
    return match.group(1) if match else None


def _release_numbers(text: str) -> tuple[int, ...]:
    numbers = [int(part) for part in text.split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def cached_release(cache: Path, engine: str, version: str) -> CacheEntry | None:
    """The complete cached release `==version` (plain numbers) picks, when the folder names decide it alone.

    None means "not decided here": the caller asks `cached_pin` (which reads every name with packaging).
    """
    try:
        names = os.listdir(_releases(cache, engine))
    except OSError:
        return None
    wanted = _release_numbers(version)
    matches = []
    for name in names:
        if name.startswith("."):
            continue
        if _PLAIN.match(name):
            if _release_numbers(name) == wanted:
                matches.append(name)
        elif not _NOT_A_PLAIN_MATCH.match(name):
            return None  # a local label, an epoch or an unusual spelling: let packaging decide
    if len(matches) != 1:
        return None
    found = CacheEntry(cache, engine, matches[0])
    return found if found.is_complete() else None


# -- what is there: `compat cache list / clean` and `compat env` -------------------------------------------


@dataclass(frozen=True)
class ReleaseFolder:
    """A folder under releases/<engine>/: a release (complete or left incomplete by a killed fetch) or a build."""

    entry: CacheEntry
    path: Path
    state: str  # "complete" | "damaged" | "incomplete" | "building"

    @property
    def facts(self) -> Path:
        return self.path / "facts"

    def record(self) -> dict | None:
        return _read_record(self.path)


def release_folders(cache: Path) -> list[ReleaseFolder]:
    """Every release folder and build folder in the cache, by engine, in version order."""
    rows = []
    for engine in engines.names():
        folder = _releases(cache, engine)
        for path in sorted(folder.iterdir(), key=_version_key) if folder.is_dir() else ():
            if not path.is_dir():
                continue
            building = path.name.startswith(".")
            version = path.name.split("-")[1] if building and path.name.count("-") >= 1 else path.name
            entry = CacheEntry(cache, engine, version)
            state = "building" if building else ("incomplete" if not entry.is_complete() else
                                                 "damaged" if entry.damage() else "complete")
            rows.append(ReleaseFolder(entry, path, state))
    return rows


def _version_key(entry: Path) -> tuple[int, Version, str]:
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(entry.name), entry.name)
    except InvalidVersion:
        return (1, Version("0"), entry.name)


def tree_size(path: Path) -> int:
    """Bytes the files under `path` take on disk (allocated blocks: a sparse file counts what it holds, not its
    apparent length, as `du` does); links counted as links, never followed."""
    total = 0
    for root, dirs, files in os.walk(path):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            with contextlib.suppress(OSError):
                total += _on_disk(os.lstat(os.path.join(root, name)))
    with contextlib.suppress(OSError):
        if path.is_file() or path.is_symlink():
            total += _on_disk(os.lstat(path))
    return total


def _on_disk(stat: os.stat_result) -> int:
    blocks = getattr(stat, "st_blocks", None)  # 512-byte units (POSIX), whatever the file system's block size
    return stat.st_size if blocks is None else blocks * 512


def cache_size(cache: Path) -> int:
    """Bytes of compat's own entries in the cache (not of anything else kept in that folder)."""
    return sum(tree_size(cache / name) for name in OWN_ENTRIES if (cache / name).exists())


def facts_dirs(cache: Path) -> list[Path]:
    """Where the facts kept outside release folders are (compat/facts.py's rule): COMPAT_FACTS_DIR, else the
    cache's facts/ (the facts of --path trees and installed engines, kept in the default cache)."""
    moved = os.environ.get("COMPAT_FACTS_DIR")
    return [Path(moved).expanduser()] if moved else [cache / "facts"]
