"""Building one release in the cache: fetch its artifact, keep the package's .py files, verify, rename into place.

The caller (released.py) holds the release's lock. The tree is built in a temp folder next to its final
name and renamed into place last, so a half-written tree is never visible; a killed run leaves only a
`.tmp-*` folder, removed by the next run. Artifacts are tried best first (the sdist, else the smallest
wheel); a remote wheel is read through HTTP ranges (network.RangedFile) when the server allows it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tarfile
import tempfile
import zipfile
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from compat.errors import SourceError
from compat.sources.archives import extract_sdist, extract_wheel
from compat.sources.cache import RECORD_NAME, CacheEntry
from compat.sources.network import CHUNK, Meter, RangedFile, RangesUnsupported, content_length, local_path, open_artifact
from compat.tree import EngineTree

if TYPE_CHECKING:
    from compat.sources.choice import Artifact

__all__ = ["download"]


def _human(size: int | None) -> str:
    if size is None:
        return "size unknown"
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return ""


class _Progress:
    """A rich bar on stderr when it is a terminal; one line otherwise; nothing with progress=False."""

    def __init__(self, enabled: bool, label: str, total: int | None, source: str):
        self._bar = None
        self._task = None
        if not enabled:
            return
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

            self._bar = Progress(
                TextColumn("fetching {task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                console=Console(stderr=True), transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task(label, total=total)
        else:
            print(f"fetching {label} from {source}", file=sys.stderr, flush=True)

    def set_total(self, total: int | None) -> None:
        if self._bar is not None and total:
            self._bar.update(self._task, total=total)

    def advance(self, n: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _check_sha256(artifact: Artifact, got: str) -> str:
    if artifact.sha256 is None:
        return "not verified: the index gives no sha256"
    if got.lower() != artifact.sha256.lower():
        raise SourceError(
            f"{artifact.filename} from {artifact.url}: sha256 mismatch (the index says {artifact.sha256}, got {got}); nothing was cached",
            hint="retry; if it persists, the index or a proxy in between serves a different file",
        )
    return "sha256"


def _fetch_sdist(artifact: Artifact, work: Path, engine: str, progress: _Progress) -> dict | None:
    staging = work / "unpacked"
    with contextlib.closing(open_artifact(artifact.url)) as raw:
        progress.set_total(content_length(raw))
        meter = Meter(raw, progress.advance)
        try:
            package = extract_sdist(meter, staging, engine)
        except (tarfile.TarError, EOFError, zlib.error) as err:
            raise SourceError(f"{artifact.filename} from {artifact.url}: not a readable .tar.gz ({err})") from None
        meter.drain()
    verified = _check_sha256(artifact, meter.sha256.hexdigest())
    if package is None:
        return None
    os.rename(package, work / engine)
    shutil.rmtree(staging)
    return {"verified": verified, "downloaded_bytes": meter.count, "ranged": False}


def _fetch_wheel(artifact: Artifact, work: Path, engine: str, progress: _Progress) -> dict | None:
    spool = work / "artifact.part"
    try:
        if artifact.url.startswith("file:"):  # a local mirror: random access for free, hash it in place
            path = local_path(artifact.url)
            with open_artifact(artifact.url) as raw:
                meter = Meter(raw, progress.advance)
                meter.drain()
            verified = _check_sha256(artifact, meter.sha256.hexdigest())
            with zipfile.ZipFile(path) as archive:
                written = extract_wheel(archive, work, engine)
            return None if written is None else {"verified": verified, "downloaded_bytes": meter.count, "ranged": False}
        try:
            with RangedFile(artifact.url, artifact.size, spool, progress.advance) as remote:
                with zipfile.ZipFile(remote) as archive:
                    written = extract_wheel(archive, work, engine, prefetch=remote.prefetch)
                detail = {
                    "verified": "crc32 of each member only: a ranged read cannot check the wheel's sha256",
                    "downloaded_bytes": remote.downloaded, "ranged": True, "range_requests": remote.requests,
                }
            return None if written is None else detail
        except RangesUnsupported:
            shutil.rmtree(work / engine, ignore_errors=True)  # members read before the server stopped honouring Range
        # The server ignores Range: download the whole wheel, then read it locally.
        with contextlib.closing(open_artifact(artifact.url)) as raw, open(spool, "wb") as out:
            progress.set_total(content_length(raw))
            meter = Meter(raw, progress.advance)
            shutil.copyfileobj(meter, out, CHUNK)
        verified = _check_sha256(artifact, meter.sha256.hexdigest())
        with zipfile.ZipFile(spool) as archive:
            written = extract_wheel(archive, work, engine)
        return None if written is None else {"verified": verified, "downloaded_bytes": meter.count, "ranged": False}
    except zipfile.BadZipFile as err:
        raise SourceError(f"{artifact.filename} from {artifact.url}: not a readable wheel ({err})") from None
    finally:
        spool.unlink(missing_ok=True)


def download(entry: CacheEntry, artifacts: list[Artifact], progress: bool) -> EngineTree:
    """Build the entry's release folder from the first artifact that holds the package (its lock held)."""
    engine, version, final = entry.engine, entry.version, entry.path
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in final.parent.glob(f".tmp-{version}-*"):  # left by a killed process; we hold the lock
        shutil.rmtree(stale, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=final.parent))
    try:
        for artifact in artifacts:
            local = artifact.url.startswith("file:")
            ranged = artifact.kind == "wheel" and not local
            size = artifact.size
            if size is None and local:
                with contextlib.suppress(OSError):
                    size = local_path(artifact.url).stat().st_size
            sized = f"{_human(size)} {artifact.kind}" if size is not None else artifact.kind
            what = f".py files of a {sized}, HTTP ranges" if ranged else sized
            where = artifact.url if local else "{0.scheme}://{0.netloc}".format(urlsplit(artifact.url))
            bar = _Progress(progress, f"{engine} {version} ({what})", None if ranged else size, where)
            try:
                fetch = _fetch_sdist if artifact.kind == "sdist" else _fetch_wheel
                detail = fetch(artifact, work, engine, bar)
            finally:
                bar.close()
            if detail is not None:
                break
            for leftover in work.iterdir():  # this artifact has no package folder: try the next one
                shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
        else:
            names = ", ".join(a.filename for a in artifacts)
            raise SourceError(f"no {engine}/__init__.py in any artifact of {engine} {version} ({names})")
        record = {
            "engine": engine, "version": version, "artifact": artifact.filename, "kind": artifact.kind,
            "sha256": artifact.sha256, "size": artifact.size, "url": artifact.url, "index": artifact.index,
            "fetched_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), **detail,
        }
        (work / RECORD_NAME).write_text(json.dumps(record, indent=1) + "\n")
        if final.exists():  # an incomplete tree from an older run (we hold the lock): move it aside first
            trash = Path(tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=final.parent))
            os.rename(final, trash / "old")
            shutil.rmtree(trash, ignore_errors=True)
        os.rename(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return entry.tree(cached=False, downloaded=detail["downloaded_bytes"])
