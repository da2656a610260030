"""HTTP for the package index, as pip does it: retries with back-off, timeouts, proxies, TLS, credentials.

pip's `network/` in miniature (stdlib `urllib` only: pip itself is never run, it takes seconds to start):
- a `Session` carries one fetch's `NetworkOptions` (settings.py) and its `Progress`;
- a request that fails in a way pip retries (HTTP 429/500/502/503/504, a refused, reset or dropped
  connection, a read that times out) is tried again up to `--retries` times, after 0, 0.5, 1, 2, 4 ... s
  (urllib3's back-off, the one pip uses; `Retry-After` honoured up to a minute), the progress saying so;
- every socket operation gives up after `--timeout` seconds, so a stalled transfer ends within it;
- a body cut short (reset, stall, fewer bytes than Content-Length) is resumed where it stopped with a
  Range request (`Download`); a server that ignores Range sends it all again and the bytes already had are
  skipped; what the resumed stream yields is checked whole (sha256) by download.py;
- credentials (auth.py) go to their host only; trust and proxies are settings.py's: `HTTPS_PROXY`,
  `NO_PROXY` and pip's `proxy` through urllib's ProxyHandler (CONNECT for https).
Ranged reads of a wheel are ranged.py's. Importing this module costs tens of milliseconds (ssl,
http.client): a cached release never does.
"""

from __future__ import annotations

import email.utils
import functools
import hashlib
import http.client
import io
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from compat import __version__
from compat.core.errors import SourceError
from compat.sources.auth import credentials_for
from compat.sources.progress import Progress
from compat.sources.settings import NetworkOptions

__all__ = [
    "CHUNK", "RETRY_STATUSES", "FetchError", "Session", "Download", "describe", "local_path", "content_length",
]

CHUNK = 1024 * 1024
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 520, 527})  # pip's status_forcelist, plus 429 and 504
BACKOFF_FACTOR = 0.25  # pip's: no wait before the first retry, then 0.5, 1, 2, 4 ... s
MAX_WAIT = 60.0  # the longest Retry-After honoured, and the longest back-off


class FetchError(SourceError):
    def __init__(self, url: str, reason: str, status: int | None = None, *, hint: str | None = None):
        super().__init__(
            f"could not fetch {url}: {reason}",
            hint=hint or "check the network and the index (PIP_INDEX_URL, pip.conf); offline, use a cached release with --offline",
        )
        self.url = url
        self.status = status


class _Transient(Exception):
    """One attempt failed the way pip retries; `reason` in words, `retry_after` seconds when the server said,
    `refused`: nothing listened at the host (not a slow index: its fix is the URL or the proxy)."""

    def __init__(self, reason: str, status: int | None = None, retry_after: float | None = None, *, refused: bool = False):
        super().__init__(reason)
        self.reason, self.status, self.retry_after, self.refused = reason, status, retry_after, refused


def _refused(err: BaseException) -> bool:
    return isinstance(getattr(err, "reason", err), ConnectionRefusedError)


def describe(err: BaseException, timeout: float | None = None) -> str:
    """Why a request failed, in words a user can act on."""
    reason = getattr(err, "reason", err)
    if isinstance(reason, socket.gaierror):
        return f"cannot resolve the host name (DNS; offline?): {reason}"
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return f"no data for {timeout:g} s (timed out)" if timeout else "timed out"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, ConnectionResetError):
        return "connection reset by the server"
    if isinstance(reason, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(reason, http.client.IncompleteRead):
        return f"the body ended early ({len(reason.partial)} bytes, {reason.expected} more expected)"
    if isinstance(reason, ssl.SSLCertVerificationError):
        return (f"TLS certificate not trusted ({reason.verify_message}); a proxy or mirror with its own CA needs "
                "PIP_CERT, `cert` in pip.conf, REQUESTS_CA_BUNDLE or SSL_CERT_FILE")
    if isinstance(reason, ssl.SSLError):
        return f"TLS error ({reason}); a proxy with its own CA needs PIP_CERT or `cert` in pip.conf"
    return str(reason) or type(reason).__name__


def _transient(err: BaseException) -> bool:
    reason = getattr(err, "reason", err)
    if isinstance(reason, ssl.SSLCertVerificationError):
        return False  # a certificate is no better a second later
    return isinstance(reason, (OSError, http.client.HTTPException))  # refused, reset, timeouts, DNS, a dropped line


def _retry_after(headers: Any) -> float | None:
    value = (headers or {}).get("Retry-After") if headers is not None else None
    if not value:
        return None
    if value.strip().isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@functools.lru_cache(maxsize=8)
def _opener(cafile: str | None, client_cert: str | None, proxies: tuple[tuple[str, str], ...],
            system_trust: tuple[str | None, str | None]) -> urllib.request.OpenerDirector:
    """Built once per trust and proxies: loading a CA bundle costs milliseconds, and a wheel takes several requests.

    `system_trust` (SSL_CERT_FILE, SSL_CERT_DIR) is part of the key: OpenSSL reads them when the context is made."""
    import os

    if cafile and os.path.isdir(cafile):
        context = ssl.create_default_context(capath=cafile)
    else:
        context = ssl.create_default_context(cafile=cafile)  # None: the system's, SSL_CERT_FILE / SSL_CERT_DIR honoured
    if client_cert:
        context.load_cert_chain(client_cert)
    return urllib.request.build_opener(urllib.request.ProxyHandler(dict(proxies)), urllib.request.HTTPSHandler(context=context))


def opener(options: NetworkOptions) -> urllib.request.OpenerDirector:
    """The opener for these options: HTTP(S)_PROXY and NO_PROXY (both cases, as requests reads them), or pip's
    `proxy` for http and https alike; the CA bundle settings.py settled, else the system's."""
    import os

    proxies = urllib.request.getproxies()
    if options.proxy:
        proxies.update(http=options.proxy, https=options.proxy)
    trust = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    return _opener(options.cafile, options.client_cert, tuple(sorted(proxies.items())), trust)


class Session:
    """One fetch's way to the index: its options, its progress, and the retry rules every request follows."""

    def __init__(self, options: NetworkOptions | None = None, progress: Progress | None = None):
        self.options = options or NetworkOptions.resolve()
        self.progress = progress or Progress(False)

    @property
    def give_up_hint(self) -> str:
        o = self.options
        return (f"a slow or busy index: raise --timeout (PIP_TIMEOUT; now {o.timeout:g} s) or --retries (PIP_RETRIES; now "
                f"{o.retries}); check the network, a proxy (HTTPS_PROXY) or the index (PIP_INDEX_URL); offline: --offline "
                "with a cached release")

    def refused_hint(self, url: str) -> str:
        """Nothing listens at the index's host: a wrong URL or port, or a proxy that is down; waiting will not help."""
        host = urlsplit(url).netloc or url
        return (f"nothing answers at {host}: check the index URL (--index-url, PIP_INDEX_URL, pip.conf) and a proxy "
                "(HTTPS_PROXY); offline: --offline with a cached release")

    def open(self, url: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
        """The response to GET `url`; retried as pip retries; FetchError naming the URL when it cannot be had."""
        attempt = 0
        while True:
            try:
                return self._open_once(url, headers)
            except _Transient as why:
                attempt += 1
                if attempt > self.options.retries:
                    tried = f" (tried {attempt} times)" if attempt > 1 else ""
                    hint = self.refused_hint(url) if why.refused else self.give_up_hint
                    raise FetchError(url, why.reason + tried, why.status, hint=hint) from None
                self.wait(attempt, url, why.reason, why.retry_after)

    def wait(self, attempt: int, url: str, why: str, retry_after: float | None = None) -> None:
        """Sleep before retry `attempt` (1-based), saying so."""
        delay = 0.0 if attempt <= 1 else BACKOFF_FACTOR * 2 ** (attempt - 1)
        if retry_after is not None:
            delay = retry_after
        delay = min(delay, MAX_WAIT)
        host = urlsplit(url).netloc or url
        self.progress.waiting(f"{why} from {host}; retry {attempt} of {self.options.retries}"
                              + (f" in {delay:.1f} s" if delay else ""))
        if delay:
            time.sleep(delay)

    def _open_once(self, url: str, headers: dict[str, str] | None) -> http.client.HTTPResponse:
        request = urllib.request.Request(url, headers={"User-Agent": f"compat/{__version__}", **(headers or {})})
        auth = credentials_for(url)
        if auth:
            request.add_unredirected_header("Authorization", auth)
        o = self.options
        try:
            tls = opener(o)
        except (ssl.SSLError, OSError) as err:
            raise SourceError(f"cannot use the TLS settings (CA bundle {o.cafile or 'the system'}, client certificate "
                              f"{o.client_cert or 'none'}): {err}",
                              hint="point PIP_CERT / cert in pip.conf at a PEM bundle (PIP_CLIENT_CERT at a PEM with its key)") from None
        try:
            response: http.client.HTTPResponse = tls.open(request, timeout=o.timeout)
            return response
        except urllib.error.HTTPError as err:
            headers_seen = err.headers
            err.close()
            reason = f"HTTP {err.code} {err.reason}"
            if err.code in RETRY_STATUSES:
                wait = _retry_after(headers_seen) if err.code in (429, 503) else None
                raise _Transient(reason, err.code, wait) from None
            raise FetchError(url, reason, status=err.code) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
            if _transient(err):
                raise _Transient(describe(err, o.timeout), refused=_refused(err)) from None
            raise FetchError(url, describe(err, o.timeout)) from None

    def read(self, url: str, headers: dict[str, str] | None = None) -> tuple[bytes, str, str]:
        """(body, content type, final URL) of a small document (an index page), a cut body asked for again."""
        attempt = 0
        while True:
            response = self.open(url, headers)
            try:
                with response:
                    return response.read(), response.headers.get_content_type(), response.geturl()
            except (OSError, http.client.HTTPException) as err:  # IncompleteRead: fewer bytes than Content-Length
                attempt += 1
                why = describe(err, self.options.timeout)
                if attempt > self.options.retries:
                    raise FetchError(url, f"{why} (tried {attempt} times)", hint=self.give_up_hint) from None
                self.wait(attempt, url, why)

    def stream(self, url: str) -> Download:
        return Download(self, url)


def local_path(url: str) -> Path:
    """The file a `file://` URL names."""
    return Path(urllib.request.url2pathname(urlsplit(url).path))


def content_length(response: Any) -> int | None:
    value = getattr(response, "headers", None)
    value = value.get("Content-Length", "") if value is not None else ""
    return int(value) if value.isdigit() else None


class Download(io.RawIOBase):
    """The body of one file on the index as a stream, hashed and counted as it passes; resumed when cut short.

    A `file://` URL is read from disk. Over HTTP, a reset, a stall or a body shorter than its Content-Length is
    resumed with `Range: bytes=<had>-` (a server that ignores Range sends it all again: the bytes already had
    are skipped), up to --retries times. The caller checks `sha256` against the index when the stream ends."""

    def __init__(self, session: Session, url: str, advance: Callable[[int], None] | None = None):
        self.session, self.url = session, url
        self.advance = advance or session.progress.advance
        self.sha256 = hashlib.sha256()
        self.count = 0  # bytes handed out (each once, whatever the resumes)
        self.resumes = 0
        self.total: int | None = None
        self._raw: io.BufferedReader | http.client.HTTPResponse
        if url.startswith("file:"):
            try:
                self._raw = open(local_path(url), "rb")
            except OSError as err:
                raise FetchError(url, err.strerror or str(err)) from None
            self.total = local_path(url).stat().st_size
            self.local = True
        else:
            self._raw = session.open(url, {"Accept-Encoding": "identity"})
            self.total = content_length(self._raw)
            self.local = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while True:
            try:
                n = self._raw.readinto(buffer)
            except (OSError, http.client.HTTPException) as err:
                if self.local:
                    raise FetchError(self.url, f"cannot read it ({err})") from None
                self._resume(describe(err, self.session.options.timeout))
                continue
            if not n and not self.local and self.total is not None and self.count < self.total:
                self._resume(f"the body ended after {self.count} of {self.total} bytes")
                continue
            if n:
                self.sha256.update(memoryview(buffer)[:n])
                self.count += n
                self.advance(n)
            return n or 0

    def drain(self) -> None:
        while self.read(CHUNK):
            pass

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()

    def _resume(self, why: str) -> None:
        """Ask again for the bytes from `count` on (or all of them, skipping what was had)."""
        self.resumes += 1
        if self.resumes > self.session.options.retries:
            raise FetchError(self.url, f"download interrupted: {why} (resumed {self.resumes - 1} times)",
                             hint=self.session.give_up_hint)
        self._raw.close()
        self.session.wait(self.resumes, self.url, f"download interrupted ({why})")
        response = self.session.open(self.url, {"Range": f"bytes={self.count}-", "Accept-Encoding": "identity"})
        skip = self.count
        if response.status == 206:
            first, total = _content_range(response)
            if first is not None and first <= self.count and (self.total is None or total in (None, self.total)):
                skip = self.count - first
            else:  # not the bytes asked for: take the whole file again
                response.close()
                response = self.session.open(self.url, {"Accept-Encoding": "identity"})
        length = content_length(response)
        if response.status != 206 and self.total is not None and length is not None and length != self.total:
            response.close()
            raise FetchError(self.url, f"the file changed while it was fetched ({self.total} bytes, then {length})")
        self._raw = response
        self._skip(skip)

    def _skip(self, n: int) -> None:
        while n > 0:
            try:
                chunk = self._raw.read(min(n, CHUNK))
            except (OSError, http.client.HTTPException) as err:
                return self._resume(describe(err, self.session.options.timeout))
            if not chunk:
                return self._resume(f"the body ended {n} bytes before the point to resume from")
            n -= len(chunk)


def _content_range(response: Any) -> tuple[int | None, int | None]:
    import re

    match = re.match(r"bytes (\d+)-(\d+)/(\d+|\*)", response.headers.get("Content-Range", ""))
    if not match:
        return None, None
    return int(match.group(1)), None if match.group(3) == "*" else int(match.group(3))
