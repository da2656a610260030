"""HTTP for the package index: credentials, TLS, errors that name the URL, and ranged reads of a wheel.

pip's `network/` in miniature (stdlib `urllib` only: pip itself is never run, it takes seconds to start):
- credentials given in an index URL are sent to that host only, and the CA bundle pip is told to use is
  the one TLS trusts (both kept by auth.py);
- `RangedFile` is pip's `lazy_wheel.LazyZipOverHTTP`: a remote zip that `zipfile` can seek in, fetched
  with HTTP Range requests into a sparse spool file, so of a wheel of hundreds of MB only the central
  directory and the members asked for travel. A server that ignores Range raises `RangesUnsupported`
  and the caller downloads the whole file instead.

Importing this module costs tens of milliseconds (ssl, http.client): a cached release never does.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import http.client
import io
import os
import re
import socket
import ssl
import threading
import urllib.error
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

from compat import __version__
from compat.errors import SourceError
from compat.sources.auth import ca_bundle, credentials_for

__all__ = [
    "TIMEOUT", "CHUNK", "TAIL_BYTES", "FetchError", "RangesUnsupported", "describe", "open_url", "open_artifact",
    "local_path", "content_length", "Meter", "RangedFile",
]

TIMEOUT = 30  # seconds per socket operation (connect, each read)
CHUNK = 1024 * 1024
TAIL_BYTES = 512 * 1024  # first ranged read of a wheel: the end record and, for vLLM/SGLang wheels, the whole directory
PARALLEL_RANGES = 4  # member spans are fetched concurrently: each request is mostly a round trip
MIN_RANGE = 64 * 1024  # a read that misses fetches at least this much
COALESCE_GAP = 1024 * 1024  # members closer than this are fetched in one request (a round trip costs more)


class FetchError(SourceError):
    def __init__(self, url: str, reason: str, status: int | None = None):
        super().__init__(
            f"could not fetch {url}: {reason}",
            hint="check the network and the index (PIP_INDEX_URL, pip.conf); offline, use a cached release with --offline",
        )
        self.status = status


class RangesUnsupported(Exception):
    """The server answered a Range request with the whole file (or described another file)."""


def describe(err: BaseException) -> str:
    """Why a request failed, in words a user can act on."""
    reason = getattr(err, "reason", err)
    if isinstance(reason, socket.gaierror):
        return f"cannot resolve the host name (DNS; offline?): {reason}"
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return f"timed out after {TIMEOUT} s"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, ssl.SSLError):
        return f"TLS error ({reason}); a proxy with its own CA needs PIP_CERT or `cert` in pip.conf"
    return str(reason) or type(reason).__name__


# -- requests -----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _tls_context(cafile: str | None) -> ssl.SSLContext:
    """Built once: loading a CA bundle costs milliseconds, and a wheel takes several requests."""
    return ssl.create_default_context(cafile=cafile)


def open_url(url: str, headers: dict[str, str] | None = None):
    """urlopen with a timeout, the host's credentials and errors as FetchError naming the URL."""
    request = urllib.request.Request(url, headers={"User-Agent": f"compat/{__version__}", **(headers or {})})
    auth = credentials_for(url)
    if auth:
        request.add_unredirected_header("Authorization", auth)
    context = _tls_context(ca_bundle()) if url.startswith("https:") else None
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT, context=context)
    except urllib.error.HTTPError as err:
        err.close()
        raise FetchError(url, f"HTTP {err.code} {err.reason}", status=err.code) from None
    except (urllib.error.URLError, OSError) as err:
        raise FetchError(url, describe(err)) from None


def local_path(url: str) -> Path:
    """The file a `file://` URL names."""
    return Path(urllib.request.url2pathname(urlsplit(url).path))


def open_artifact(url: str):
    """A readable binary stream of a file on the index (`file://` or http(s))."""
    if url.startswith("file:"):
        try:
            return open(local_path(url), "rb")
        except OSError as err:
            raise FetchError(url, err.strerror or str(err)) from None
    return open_url(url, {"Accept-Encoding": "identity"})


def content_length(response) -> int | None:
    value = getattr(response, "headers", {}).get("Content-Length", "")
    return int(value) if value.isdigit() else None


class Meter(io.RawIOBase):
    """A read-only stream that hashes and counts what passes through it and reports progress."""

    def __init__(self, raw, advance):
        self._raw = raw
        self._advance = advance
        self.sha256 = hashlib.sha256()
        self.count = 0

    def readable(self):
        return True

    def readinto(self, buffer):
        try:
            n = self._raw.readinto(buffer)
        except (OSError, http.client.HTTPException) as err:
            raise FetchError(getattr(self._raw, "url", None) or "the artifact", f"download interrupted: {describe(err)}") from None
        if n:
            self.sha256.update(memoryview(buffer)[:n])
            self.count += n
            self._advance(n)
        return n

    def drain(self):
        while self.read(CHUNK):
            pass


# -- ranged reads: a lazy wheel -------------------------------------------------------------------


class RangedFile(io.RawIOBase):
    """A remote file read through HTTP Range requests, seekable for zipfile; fetched bytes live in a sparse spool file."""

    def __init__(self, url: str, size: int | None, spool: Path, advance):
        self.url = url
        self._advance = advance
        self._fd = os.open(spool, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self._have: list[tuple[int, int]] = []  # fetched [start, end) intervals, sorted, disjoint
        self._pos = 0
        self._lock = threading.Lock()  # prefetch fetches spans from several threads
        self.requests = 0
        self.downloaded = 0
        self.size = size
        try:
            if size is None or size > TAIL_BYTES:
                self._fetch(None if size is None else size - TAIL_BYTES, None if size is None else size)
            else:
                self._fetch(0, size)
        except BaseException:
            self.close()
            raise

    # io.RawIOBase
    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer):
        n = min(len(buffer), self.size - self._pos)
        if n <= 0:
            return 0
        self.ensure(self._pos, self._pos + n)
        data = os.pread(self._fd, n, self._pos)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def close(self):
        if not self.closed:
            os.close(self._fd)
        super().close()

    # ranges
    def missing(self, start: int, end: int) -> list[tuple[int, int]]:
        gaps, cursor = [], start
        for have_start, have_end in self._have:
            if have_end <= cursor:
                continue
            if have_start >= end:
                break
            if have_start > cursor:
                gaps.append((cursor, have_start))
            cursor = max(cursor, have_end)
        if cursor < end:
            gaps.append((cursor, end))
        return gaps

    def ensure(self, start: int, end: int) -> None:
        for gap_start, gap_end in self.missing(start, end):
            self._fetch(gap_start, min(self.size, max(gap_end, gap_start + MIN_RANGE)))

    def _fetch(self, start: int | None, end: int | None) -> None:
        """Bytes [start, end) (start None: the last TAIL_BYTES) into the spool; RangesUnsupported if the server ignores Range."""
        wanted = f"bytes=-{TAIL_BYTES}" if start is None else f"bytes={start}-{end - 1}"
        with self._lock:
            self.requests += 1
        try:
            response = open_url(self.url, {"Range": wanted, "Accept-Encoding": "identity"})
        except FetchError as err:
            if err.status == 416:  # Range Not Satisfiable: the index's size is wrong; read it whole
                raise RangesUnsupported() from None
            raise
        with response:
            if response.status != 206:
                raise RangesUnsupported()
            match = re.match(r"bytes (\d+)-(\d+)/(\d+|\*)", response.headers.get("Content-Range", ""))
            if not match or (start is not None and int(match.group(1)) != start):
                raise RangesUnsupported()
            first, last, total = int(match.group(1)), int(match.group(2)), match.group(3)
            if total == "*" or (self.size is not None and int(total) != self.size):
                raise RangesUnsupported()  # not the file the index described: a full download checks its sha256
            self.size = int(total)
            offset = first
            try:
                while chunk := response.read(CHUNK):
                    os.pwrite(self._fd, chunk, offset)
                    offset += len(chunk)
                    with self._lock:
                        self.downloaded += len(chunk)
                        self._advance(len(chunk))
            except (OSError, http.client.HTTPException) as err:
                raise FetchError(self.url, f"download interrupted: {describe(err)}") from None
            if offset != last + 1:
                raise FetchError(self.url, f"short ranged read ({offset - first} of {last + 1 - first} bytes)")
        with self._lock:
            self._add(first, last + 1)

    def _add(self, start: int, end: int) -> None:
        merged = []
        for a, b in sorted([*self._have, (start, end)]):
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        self._have = merged

    def prefetch(self, archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo]) -> None:
        """Fetch the chosen members in few requests: each member runs to the next entry's header; close spans merge."""
        starts = sorted({i.header_offset for i in archive.infolist()} | {getattr(archive, "start_dir", self.size)})
        spans = []
        for info in sorted(infos, key=lambda i: i.header_offset):
            nxt = starts[bisect.bisect_right(starts, info.header_offset)] if info.header_offset < starts[-1] else self.size
            start, end = info.header_offset, min(nxt, self.size)
            if spans and start - spans[-1][1] <= COALESCE_GAP:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end])
        gaps = [gap for start, end in spans for gap in self.missing(start, end)]
        pool = ThreadPoolExecutor(PARALLEL_RANGES)
        try:
            for done in [pool.submit(self._fetch, start, end) for start, end in gaps]:
                done.result()
        finally:
            pool.shutdown(cancel_futures=True)  # after a failure, the queued ranges are not worth fetching
