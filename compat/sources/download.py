"""Building one release in the cache: fetch its artifact, keep the package's .py files, verify, rename into place.

The caller (released.py) holds the release's lock. The tree is built in a temp folder next to its final
name, with its manifest (manifest.py) and then its record, and renamed into place last, so a half-written
tree is never visible; a killed run leaves only a `.tmp-*` folder, removed by the next run. Artifacts are
tried best first (the sdist, else the smallest wheel); a remote wheel is read through HTTP ranges
(ranged.RangedFile) when the server allows it.

Never a bad byte: an artifact whose sha256 differs from the index's is fetched once more from scratch (a
proxy or a line may have flipped it) and then refused; a wheel member that fails its CRC in a ranged read
sends the whole wheel down instead, checked against its sha256. Nothing of a failed attempt is kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from compat.core.errors import SourceError
from compat.sources.archives import extract_sdist, extract_wheel
from compat.sources.cache import RECORD_NAME, CacheEntry
from compat.sources.manifest import forget, write_manifest
from compat.sources.network import CHUNK, Download, Session, local_path
from compat.sources.progress import human
from compat.sources.ranged import RangedFile, RangesUnsupported
from compat.core.tree import EngineTree

if TYPE_CHECKING:
    from compat.sources.choice import Artifact

__all__ = ["HashMismatch", "download"]


class HashMismatch(SourceError):
    """The bytes fetched are not the file the index describes (sha256, or size when no hash is given)."""

    def __init__(self, artifact: Artifact, got: str):
        self.got = got
        super().__init__(
            f"{artifact.filename} from {artifact.url}: {got}; nothing was cached",
            hint="retry; if it persists, the index or a proxy in between serves a different file",
        )


def _verify(artifact: Artifact, stream: Download) -> str:
    """How the bytes were checked; HashMismatch when they are not the index's file."""
    if artifact.sha256 is not None:
        got = stream.sha256.hexdigest()
        if got.lower() != artifact.sha256.lower():
            raise HashMismatch(artifact, f"sha256 mismatch (the index says {artifact.sha256}, got {got})")
        return "sha256"
    if artifact.size is not None and stream.count != artifact.size:
        raise HashMismatch(artifact, f"size mismatch (the index says {artifact.size} bytes, got {stream.count})")
    return "not verified: the index gives no sha256"


def _fetch_sdist(artifact: Artifact, work: Path, engine: str, session: Session) -> dict[str, Any] | None:
    staging = work / "unpacked"
    with contextlib.closing(session.stream(artifact.url)) as stream:
        session.progress.set_total(stream.total)
        try:
            package = extract_sdist(stream, staging, engine)
        except (tarfile.TarError, EOFError, zlib.error) as err:
            stream.drain()  # a flipped byte breaks the gzip stream first: the sha256 says which it is
            _verify(artifact, stream)
            raise SourceError(f"{artifact.filename} from {artifact.url}: not a readable .tar.gz ({err})") from None
        stream.drain()
    verified = _verify(artifact, stream)
    if package is None:
        return None
    os.rename(package, work / engine)
    shutil.rmtree(staging)
    return {"verified": verified, "downloaded_bytes": stream.count, "ranged": False, "resumed": stream.resumes}


def _whole_wheel(artifact: Artifact, work: Path, engine: str, session: Session, spool: Path) -> dict[str, Any] | None:
    """Download the wheel whole into `spool` (a local one is read in place), verify it, extract it."""
    with contextlib.closing(session.stream(artifact.url)) as stream:
        session.progress.set_total(stream.total)
        if stream.local:
            stream.drain()
            path = local_path(artifact.url)
        else:
            with open(spool, "wb") as out:
                shutil.copyfileobj(stream, out, CHUNK)
            path = spool
    verified = _verify(artifact, stream)
    with zipfile.ZipFile(path) as archive:
        written = extract_wheel(archive, work, engine)
    return None if written is None else {"verified": verified, "downloaded_bytes": stream.count, "ranged": False,
                                         "resumed": stream.resumes}


def _fetch_wheel(artifact: Artifact, work: Path, engine: str, session: Session) -> dict[str, Any] | None:
    spool = work / "artifact.part"
    ranged_bytes = 0
    try:
        if not artifact.url.startswith("file:"):  # a local mirror: random access for free, hashed in place
            try:
                with RangedFile(session, artifact.url, artifact.size, spool, session.progress.advance) as remote:
                    try:
                        with zipfile.ZipFile(remote) as archive:
                            written = extract_wheel(archive, work, engine, prefetch=remote.prefetch)
                    finally:
                        ranged_bytes = remote.downloaded
                    detail: dict[str, Any] | None = {
                        "verified": "crc32 of each member only: a ranged read cannot check the wheel's sha256",
                        "downloaded_bytes": remote.downloaded, "ranged": True, "range_requests": remote.requests,
                    }
                return None if written is None else detail
            except RangesUnsupported:  # the server ignores Range: download the whole wheel, then read it locally
                shutil.rmtree(work / engine, ignore_errors=True)  # members read before the server stopped honouring Range
            except (zipfile.BadZipFile, zlib.error, EOFError) as err:  # a member failed its CRC: bytes flipped on the way
                shutil.rmtree(work / engine, ignore_errors=True)
                session.progress.waiting(f"{artifact.filename}: {err} in a ranged read; fetching the whole wheel to check its sha256")
        detail = _whole_wheel(artifact, work, engine, session, spool)
        if detail is not None:
            detail["downloaded_bytes"] += ranged_bytes
        return detail
    except zipfile.BadZipFile as err:
        raise SourceError(f"{artifact.filename} from {artifact.url}: not a readable wheel ({err})") from None
    finally:
        spool.unlink(missing_ok=True)


def _clear(work: Path) -> None:
    for leftover in work.iterdir():
        shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()


def _fetch(artifact: Artifact, work: Path, engine: str, version: str, session: Session) -> dict[str, Any] | None:
    """One artifact into `work`; fetched once more from scratch when its bytes fail the sha256 (and --retries allows)."""
    local = artifact.url.startswith("file:")
    size = artifact.size
    if size is None and local:
        with contextlib.suppress(OSError):
            size = local_path(artifact.url).stat().st_size
    sized = f"{human(size)} {artifact.kind}" if size is not None else artifact.kind
    ranged = artifact.kind == "wheel" and not local
    what = f".py files of a {sized}, HTTP ranges" if ranged else sized
    where = artifact.url if local else "{0.scheme}://{0.netloc}".format(urlsplit(artifact.url))
    fetch = _fetch_sdist if artifact.kind == "sdist" else _fetch_wheel
    session.progress.start(f"{engine} {version} ({what})", None if ranged else size, where)
    try:
        attempt = 0
        while True:
            try:
                return fetch(artifact, work, engine, session)
            except HashMismatch as bad:
                _clear(work)
                attempt += 1
                if local or attempt > min(1, session.options.retries):
                    raise
                session.wait(attempt, artifact.url, f"{bad.got}; fetching it again")
    finally:
        session.progress.close()


def download(entry: CacheEntry, artifacts: list[Artifact], session: Session) -> EngineTree:
    """Build the entry's release folder from the first artifact that holds the package (its lock held)."""
    engine, version, final = entry.engine, entry.version, entry.path
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in final.parent.glob(f".tmp-{version}-*"):  # left by a killed process; we hold the lock
        shutil.rmtree(stale, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=final.parent))
    try:
        for artifact in artifacts:
            detail = _fetch(artifact, work, engine, version, session)
            if detail is not None:
                break
            _clear(work)  # this artifact has no package folder: try the next one
        else:
            names = ", ".join(a.filename for a in artifacts)
            raise SourceError(f"no {engine}/__init__.py in any artifact of {engine} {version} ({names})")
        record = {
            "engine": engine, "version": version, "artifact": artifact.filename, "kind": artifact.kind,
            "sha256": artifact.sha256, "size": artifact.size, "url": artifact.url, "index": artifact.index,
            "fetched_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), **detail,
            "manifest": write_manifest(work, engine),
        }
        (work / RECORD_NAME).write_text(json.dumps(record, indent=1) + "\n")  # last: the mark of a whole release
        if final.exists():  # an incomplete or damaged tree from an older run (we hold the lock): move it aside first
            trash = Path(tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=final.parent))
            os.rename(final, trash / "old")
            shutil.rmtree(trash, ignore_errors=True)
        os.rename(work, final)
        forget(final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return entry.tree(cached=False, downloaded=detail["downloaded_bytes"])
