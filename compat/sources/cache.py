"""The user cache of released trees: where it is, what a complete release looks like, locks, atomic writes.

Layout under `cache_root()`:

    releases/<engine>/<version>/<engine>/**.py   the package's Python files
    releases/<engine>/<version>/release.json     the record: artifact, index, sha256, when (written last)
    releases/<engine>/.tmp-<version>-*/          a release being built (renamed into place when done)
    index/<engine>.json                          the last index listing (see index.py)
    locks/<engine>-<version>.lock                one flock per release

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
import sys
from pathlib import Path

from compat.tree import EngineTree, SourceInfo

TYPE_CHECKING = False  # neither typing nor packaging is imported on the way to a cached pin
if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

__all__ = [
    "RECORD_NAME", "cache_root", "atomic_write", "release_dir", "release_record", "is_complete", "cached_versions",
    "cached_pin", "plain_pin", "cached_release", "release_lock", "release_tree",
]

RECORD_NAME = "release.json"


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """`cache_dir`, else `$XDG_CACHE_HOME/compat`, else `~/.cache/compat` (not created here)."""
    if cache_dir:
        return Path(cache_dir).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "compat"
    return Path.home() / ".cache" / "compat"


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to a temp file beside `path`, then rename it over `path`: a reader sees old or new, never half."""
    import tempfile  # only writers pay for it (start-up of a cached probe reads only)

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def release_dir(cache: Path, engine: str, version: str) -> Path:
    return cache / "releases" / engine / version


def release_record(directory: Path) -> dict | None:
    """release.json of a cached release; None when missing or unreadable (an incomplete tree)."""
    try:
        record = json.loads((directory / RECORD_NAME).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def is_complete(directory: Path, engine: str) -> bool:
    return (directory / engine / "__init__.py").is_file() and release_record(directory) is not None


def _versions_on_disk(cache: Path, engine: str) -> list[tuple[Version, Path]]:
    """(version, folder) of every folder named like a version, ascending; complete or not."""
    from packaging.version import InvalidVersion, Version

    folder = cache / "releases" / engine
    found = []
    for entry in folder.iterdir() if folder.is_dir() else ():
        if entry.name.startswith("."):
            continue
        try:
            found.append((Version(entry.name), entry))
        except InvalidVersion:
            continue
    return sorted(found, key=lambda item: item[0])


def cached_versions(cache: Path, engine: str) -> list[str]:
    """The complete releases in the cache, ascending."""
    return [str(version) for version, entry in _versions_on_disk(cache, engine) if is_complete(entry, engine)]


def cached_pin(cache: Path, engine: str, spec: SpecifierSet) -> Path | None:
    """The highest complete cached release that `spec` matches (only the matching ones are checked)."""
    for version, entry in reversed(_versions_on_disk(cache, engine)):
        if spec.contains(version, prereleases=True) and is_complete(entry, engine):
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


def cached_release(cache: Path, engine: str, version: str) -> Path | None:
    """The complete cached release `==version` (plain numbers) picks, when the folder names decide it alone.

    None means "not decided here": the caller asks `cached_pin` (which reads every name with packaging).
    """
    try:
        names = os.listdir(cache / "releases" / engine)
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
    found = cache / "releases" / engine / matches[0]
    return found if is_complete(found, engine) else None


@contextlib.contextmanager
def release_lock(cache: Path, engine: str, version: str, progress: bool):
    """An exclusive flock per release; the second process waits here, then finds the release cached."""
    path = cache / "locks" / f"{engine}-{version}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if progress:
                print(f"waiting for another process fetching {engine} {version} into {cache}", file=sys.stderr, flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def release_tree(directory: Path, engine: str, cached: bool, downloaded: int = 0) -> EngineTree:
    """The EngineTree of a release folder, its `source` detail taken from the record."""
    record = release_record(directory) or {}
    detail = {
        "artifact": record.get("artifact"), "index": record.get("index"), "cached": cached,
        "url": record.get("url"), "sha256": record.get("sha256"), "verified": record.get("verified"),
        "fetched_at": record.get("fetched_at"), "downloaded_bytes": downloaded,
    }
    if record.get("ranged"):
        detail["range_requests"] = record.get("range_requests")
    return EngineTree(engine, directory, record.get("version") or directory.name, SourceInfo("released", str(directory), detail))
