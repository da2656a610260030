"""A cached release's manifest: every file and its size, and one hash that seals the list.

download.py writes `manifest.json` into the release folder before the record, and the record
(`release.json`) carries the manifest's sha256; the folder is renamed into place last. So a release in
the cache is whole, with its manifest, or not there at all. On use, cache.py checks it cheaply: the
manifest's hash against the record, then every file's size (one stat each), once per process per release.
A file cut short, emptied, deleted or a manifest edited shows; a byte flipped inside a file of the same
size does not (the sdist's sha256 was checked before anything was written, and a wheel member's CRC).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from compat.core.hashing import sha256

__all__ = ["MANIFEST_NAME", "write_manifest", "check_manifest", "forget"]

MANIFEST_NAME = "manifest.json"
STAT_THREADS = 4
_CHECKED: dict[str, str | None] = {}  # release folder -> problem (None: sound), for this process


def write_manifest(folder: Path, package: str) -> dict:
    """Write `folder/manifest.json` listing `folder/<package>/**`; returns what the record keeps of it."""
    files: dict[str, int] = {}
    base = folder / package
    for root, _, names in os.walk(base):
        for name in names:
            path = os.path.join(root, name)
            files[os.path.relpath(path, folder)] = os.lstat(path).st_size
    text = json.dumps({"files": dict(sorted(files.items()))}, indent=0, separators=(",", ":")) + "\n"
    (folder / MANIFEST_NAME).write_text(text)
    return {"files": len(files), "bytes": sum(files.values()), "sha256": sha256(text.encode()).hexdigest()}


def check_manifest(folder: Path, sealed: dict | None) -> str | None:
    """What is wrong with the release in `folder` against its manifest (`sealed`: the record's part), or None.

    A release without a manifest (fetched by compat 0.1) is taken as it is, as it always was."""
    if not isinstance(sealed, dict) or not sealed.get("sha256"):
        return None
    key = str(folder)
    if key not in _CHECKED:
        _CHECKED[key] = _problem(folder, sealed)
    return _CHECKED[key]


def forget(folder: Path) -> None:
    """The release in `folder` was replaced: check it afresh when next used."""
    _CHECKED.pop(str(folder), None)


def _problem(folder: Path, sealed: dict) -> str | None:
    try:
        data = (folder / MANIFEST_NAME).read_bytes()
    except OSError:
        return f"its {MANIFEST_NAME} is missing"
    if sha256(data).hexdigest() != sealed["sha256"]:
        return f"its {MANIFEST_NAME} does not match the record's hash"
    try:
        files = json.loads(data)["files"]
    except (ValueError, KeyError, TypeError):
        return f"its {MANIFEST_NAME} cannot be read"
    try:  # one stat per file, relative to the folder: no Path objects, no walk
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return "its folder cannot be read"
    try:
        return _sizes_problem(fd, list(files.items()))
    finally:
        os.close(fd)


def _sizes_problem(fd: int, files: list[tuple[str, int]]) -> str | None:
    """The first file (in the manifest's order) missing or of another size, in words; None when all are as listed.

    vLLM has 2,600 files, and a stat costs 3 to 30 us on a busy virtual machine: the stats are shared by STAT_THREADS
    threads (a stat releases the GIL), which takes about half the time on two cores."""
    chunks = [files[i::STAT_THREADS] for i in range(STAT_THREADS)] if len(files) >= 4 * STAT_THREADS else [files]
    found: list[tuple[int, str]] = []

    def stat_all(chunk: list[tuple[str, int]], step: int, first: int) -> None:
        for number, (relpath, size) in enumerate(chunk):
            try:
                actual = os.stat(relpath, dir_fd=fd).st_size
            except OSError:
                found.append((first + number * step, f"{relpath} is missing"))
                return
            if actual != size:
                found.append((first + number * step, f"{relpath} has {actual} bytes, the manifest says {size}"))
                return

    if len(chunks) == 1:
        stat_all(chunks[0], 1, 0)
    else:
        import threading

        threads = [threading.Thread(target=stat_all, args=(chunk, len(chunks), first), daemon=True)
                   for first, chunk in enumerate(chunks)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return min(found)[1] if found else None
