"""Ranged reads of a remote wheel: pip's `lazy_wheel.LazyZipOverHTTP`, with pip's retries.

`RangedFile` is a remote zip that `zipfile` can seek in, fetched with HTTP Range requests into a sparse
spool file, so of a wheel of hundreds of MB only the central directory and the members asked for travel.
A range cut short is asked again from where it stopped (network.Session's retries and back-off). A server
that ignores Range, or answers with other bytes than asked (another offset, another file size), raises
`RangesUnsupported` and the caller downloads the whole file instead, checked against its sha256.
"""

from __future__ import annotations

import bisect
import http.client
import io
import os
import threading
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from compat.sources.network import CHUNK, FetchError, Session, describe

__all__ = ["TAIL_BYTES", "RangesUnsupported", "RangedFile"]

TAIL_BYTES = 512 * 1024  # first ranged read of a wheel: the end record and, for vLLM/SGLang wheels, the whole directory
PARALLEL_RANGES = 4  # member spans are fetched concurrently: each request is mostly a round trip
MIN_RANGE = 64 * 1024  # a read that misses fetches at least this much
COALESCE_GAP = 1024 * 1024  # members closer than this are fetched in one request (a round trip costs more)


class RangesUnsupported(Exception):
    """The server answered a Range request with the whole file (or described another file)."""


class _Cut(Exception):
    """A range's body stopped at `offset` (exclusive) for `why`."""

    def __init__(self, offset: int, why: str):
        super().__init__(why)
        self.offset, self.why = offset, why


class RangedFile(io.RawIOBase):
    """A remote file read through HTTP Range requests, seekable for zipfile; fetched bytes live in a sparse spool file."""

    def __init__(self, session: Session, url: str, size: int | None, spool: Path, advance: Callable[[int], None]):
        self.session, self.url = session, url
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
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size or 0}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), (self.size or 0) - self._pos)
        if n <= 0:
            return 0
        self.ensure(self._pos, self._pos + n)
        data = os.pread(self._fd, n, self._pos)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def close(self) -> None:
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
            self._fetch(gap_start, min(self.size or gap_end, max(gap_end, gap_start + MIN_RANGE)))

    def _fetch(self, start: int | None, end: int | None) -> None:
        """Bytes [start, end) (start None: the last TAIL_BYTES) into the spool, resumed where a cut left off."""
        cuts = 0
        while True:
            try:
                return self._fetch_once(start, end)
            except _Cut as cut:
                cuts += 1
                if cuts > self.session.options.retries:
                    raise FetchError(self.url, f"download interrupted: {cut.why} (resumed {cuts - 1} times)",
                                     hint=self.session.give_up_hint) from None
                self.session.wait(cuts, self.url, f"download interrupted ({cut.why})")
                start, end = cut.offset, end if end is not None else self.size

    def _fetch_once(self, start: int | None, end: int | None) -> None:
        import re

        wanted = f"bytes=-{TAIL_BYTES}" if start is None else f"bytes={start}-{(end or 0) - 1}"
        with self._lock:
            self.requests += 1
        try:
            response = self.session.open(self.url, {"Range": wanted, "Accept-Encoding": "identity"})
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
                while offset <= last and (chunk := response.read(min(CHUNK, last + 1 - offset))):
                    os.pwrite(self._fd, chunk, offset)
                    offset += len(chunk)
                    with self._lock:
                        self.downloaded += len(chunk)
                        self._advance(len(chunk))
            except (OSError, http.client.HTTPException) as err:
                self._keep(first, offset)
                raise _Cut(offset, describe(err, self.session.options.timeout)) from None
            self._keep(first, offset)
            if offset != last + 1:
                raise _Cut(offset, f"the range ended after {offset - first} of {last + 1 - first} bytes")

    def _keep(self, start: int, end: int) -> None:
        if end <= start:
            return
        with self._lock:
            merged: list[tuple[int, int]] = []
            for a, b in sorted([*self._have, (start, end)]):
                if merged and a <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], b))
                else:
                    merged.append((a, b))
            self._have = merged

    def prefetch(self, archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo]) -> None:
        """Fetch the chosen members in few requests: each member runs to the next entry's header; close spans merge."""
        size = self.size or 0
        starts = sorted({i.header_offset for i in archive.infolist()} | {getattr(archive, "start_dir", size)})
        spans: list[list[int]] = []
        for info in sorted(infos, key=lambda i: i.header_offset):
            nxt = starts[bisect.bisect_right(starts, info.header_offset)] if info.header_offset < starts[-1] else size
            start, end = info.header_offset, min(nxt, size)
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
