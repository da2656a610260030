"""A small, bounded HTTP client for OpenAI-compatible servers (stdlib urllib: proxies from the environment,
https with the system's CA store or SSL_CERT_FILE).

Bounded, because the server is someone else's and may be hostile or broken:
- every socket operation times out (`io_timeout`), and every request has a deadline (`deadline`) checked
  between reads, so a server dribbling a byte at a time cannot hold a run for longer than deadline + one
  socket timeout;
- every body is read up to a size cap (`max_bytes`), a streamed line up to `MAX_LINE`: a larger answer is
  refused, never buffered.

Errors are typed and carry their data: `Unreachable` (exit 3), `Unauthorized` (exit 2: which key to set),
`HttpStatus` (any other status: the caller decides what it means), `ResponseTooLarge` / `TooSlow` (exit 4).
"""

from __future__ import annotations

import json
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from compat import __version__
from compat.core.errors import EXIT_REFUSED, EXIT_SOURCE, EXIT_USAGE, CompatError

MAX_JSON = 4 << 20       # an info endpoint's answer
MAX_METRICS = 32 << 20   # /metrics of a large server stays in the low MBs
MAX_LINE = 1 << 20       # one server-sent event
MAX_STREAM = 64 << 20    # one streamed completion
CHUNK = 64 << 10
API_KEY_ENV = "OPENAI_API_KEY"


class ServerError(CompatError):
    """Something about the server at `url`."""

    def __init__(self, message: str, *, url: str, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.url = url


class Unreachable(ServerError):
    exit_code = EXIT_SOURCE


class Unauthorized(ServerError):
    exit_code = EXIT_USAGE

    def __init__(self, url: str, *, key_source: str | None):
        if key_source is None:
            message = f"{url} asks for an API key (HTTP 401) and none was given"
            hint = f"set {API_KEY_ENV}=<the server's key> or pass --api-key KEY (vLLM: the --api-key it was started with)"
        else:
            message = f"{url} refused the API key from {key_source} (HTTP 401)"
            hint = f"give the key the server was started with (--api-key KEY or {API_KEY_ENV})"
        super().__init__(message, url=url, hint=hint)
        self.key_source = key_source


class HttpStatus(ServerError):
    exit_code = EXIT_REFUSED

    def __init__(self, url: str, status: int, reason: str, body: str):
        detail = f": {body[:300]}" if body else ""
        super().__init__(f"{url} answered HTTP {status} {reason}{detail}", url=url)
        self.status, self.reason, self.body = status, reason, body


class ResponseTooLarge(ServerError):
    exit_code = EXIT_REFUSED


class TooSlow(ServerError):
    exit_code = EXIT_REFUSED


class NotJson(ServerError):
    exit_code = EXIT_REFUSED


@dataclass(frozen=True)
class Client:
    """One server: its base URL (scheme://host:port[/prefix], no trailing slash), the key and the limits."""

    base_url: str
    api_key: str | None = None
    key_source: str | None = None       # "--api-key" | "OPENAI_API_KEY" | None: named in a 401
    io_timeout: float = 30.0            # per socket operation
    deadline: float = 60.0              # per request (a streamed completion has its own)
    headers: dict[str, str] = field(default_factory=dict)

    def url(self, path: str) -> str:
        return self.base_url + path

    def _request(self, path: str, body: dict | None = None, accept: str = "application/json") -> urllib.request.Request:
        headers = {"User-Agent": f"compat/{__version__}", "Accept": accept, **self.headers}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        return urllib.request.Request(self.url(path), data=data, headers=headers, method="POST" if data else "GET")

    def _open(self, request: urllib.request.Request):
        context = ssl.create_default_context() if request.full_url.startswith("https:") else None
        try:
            return urllib.request.urlopen(request, timeout=self.io_timeout, context=context)
        except urllib.error.HTTPError as err:
            body = _read_error_body(err)
            if err.code == 401:
                raise Unauthorized(self.base_url, key_source=self.key_source) from None
            raise HttpStatus(request.full_url, err.code, str(err.reason), body) from None
        except (urllib.error.URLError, OSError, ValueError, http_errors()) as err:
            raise Unreachable(f"cannot reach {request.full_url}: {describe(err)}", url=self.base_url,
                              hint="check the URL (scheme, host, port) and that the server is running") from None

    def get_bytes(self, path: str, max_bytes: int = MAX_JSON, accept: str = "application/json") -> bytes:
        started = time.monotonic()
        request = self._request(path, accept=accept)
        response = self._open(request)
        with response:
            return _read_bounded(response, request.full_url, self.base_url, max_bytes, started, self.deadline)

    def get_json(self, path: str, max_bytes: int = MAX_JSON) -> Any:
        data = self.get_bytes(path, max_bytes)
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deeply to decode
            raise NotJson(f"{self.url(path)} did not answer JSON ({_snippet(data)})", url=self.base_url) from None

    def post_json(self, path: str, body: dict, max_bytes: int = MAX_JSON) -> Any:
        """POST `body` as JSON and decode the (bounded) JSON answer."""
        started = time.monotonic()
        request = self._request(path, body)
        response = self._open(request)
        with response:
            data = _read_bounded(response, request.full_url, self.base_url, max_bytes, started, self.deadline)
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise NotJson(f"{self.url(path)} did not answer JSON ({_snippet(data)})", url=self.base_url) from None

    def stream_events(self, path: str, body: dict, *, deadline: float) -> Iterator[tuple[float, Any]]:
        """POST `body` and yield (monotonic time, decoded JSON) for every `data:` event of a server-sent-events
        answer, until `[DONE]` or the end. A non-JSON event raises NotJson; limits as above."""
        started = time.monotonic()
        request = self._request(path, body, accept="text/event-stream")
        response = self._open(request)
        with response:
            for line in self._lines(response, request.full_url, started, deadline):
                text = line.strip()
                if not text.startswith(b"data:"):
                    continue  # comments, event names, blank separators
                payload = text[5:].strip()
                if payload == b"[DONE]":
                    return
                try:
                    event = json.loads(payload)
                except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deeply to decode
                    raise NotJson(f"{request.full_url} streamed an event that is not JSON ({_snippet(payload)})",
                                  url=self.base_url) from None
                yield time.monotonic(), event

    def _lines(self, response, url: str, started: float, deadline: float) -> Iterator[bytes]:
        """The answer's lines, read with `read1` (whatever has arrived) and the deadline checked between reads: a
        server dribbling a byte at a time, never a newline, is given up at the deadline (a `readline` would wait
        for its newline as long as each byte came within the socket timeout)."""
        buffer = bytearray()
        total = 0
        while True:
            _check_deadline(started, deadline, url, self.base_url)
            try:
                chunk = response.read1(CHUNK) if hasattr(response, "read1") else response.readline(MAX_LINE + 1)
            except (socket.timeout, TimeoutError):
                raise TooSlow(f"{url} sent nothing for {self.io_timeout:.0f} s", url=self.base_url,
                              hint="a loaded server: raise --request-timeout, or lower --concurrency") from None
            except (OSError, http_errors()) as err:
                raise Unreachable(f"{url}: the stream broke ({describe(err)})", url=self.base_url) from None
            if not chunk:
                if buffer:
                    yield bytes(buffer)
                return
            total += len(chunk)
            if total > MAX_STREAM:
                raise ResponseTooLarge(f"{url} sent more than {MAX_STREAM} bytes in one answer; refused", url=self.base_url)
            buffer += chunk
            start = 0
            while (end := buffer.find(b"\n", start)) >= 0:
                yield bytes(buffer[start:end + 1])
                start = end + 1
            del buffer[:start]
            if len(buffer) > MAX_LINE:
                raise ResponseTooLarge(f"{url} sent more than {MAX_LINE} bytes in one event; refused", url=self.base_url)


def http_errors() -> type[Exception]:
    import http.client

    return http.client.HTTPException


def _check_deadline(started: float, deadline: float, url: str, base: str) -> None:
    if time.monotonic() - started > deadline:
        raise TooSlow(f"{url} took longer than {deadline:.0f} s", url=base,
                      hint="a slow or overloaded server: raise --request-timeout, or lower --max-tokens / --concurrency")


def _read_bounded(response, url: str, base: str, max_bytes: int, started: float, deadline: float) -> bytes:
    length = response.headers.get("Content-Length")
    if length and length.isdigit() and int(length) > max_bytes:
        raise ResponseTooLarge(f"{url} announced {int(length)} bytes, more than the {max_bytes} this answer may have; "
                               "refused", url=base)
    parts: list[bytes] = []
    total = 0
    while True:
        _check_deadline(started, deadline, url, base)
        try:
            chunk = response.read1(CHUNK) if hasattr(response, "read1") else response.read(CHUNK)
        except (socket.timeout, TimeoutError):
            raise TooSlow(f"{url} stopped sending for longer than the socket timeout", url=base) from None
        except (OSError, http_errors()) as err:
            raise Unreachable(f"{url}: the answer broke off ({describe(err)})", url=base) from None
        if not chunk:
            return b"".join(parts)
        total += len(chunk)
        if total > max_bytes:
            raise ResponseTooLarge(f"{url} sent more than {max_bytes} bytes; refused", url=base)
        parts.append(chunk)


def _read_error_body(err: urllib.error.HTTPError) -> str:
    try:
        return err.read(4096).decode("utf-8", errors="replace").strip()
    except (OSError, ValueError, http_errors()):
        return ""
    finally:
        err.close()


def _snippet(data: bytes) -> str:
    text = data[:80].decode("utf-8", errors="replace").strip()
    return repr(text) if text else "an empty body"


def describe(err: BaseException) -> str:
    reason = getattr(err, "reason", err)
    if isinstance(reason, socket.gaierror):
        return f"cannot resolve the host name ({reason.strerror or reason})"
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return "timed out"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted ({reason.verify_message}); set SSL_CERT_FILE to the CA that signed it"
    if isinstance(reason, ssl.SSLError):
        return f"TLS error ({reason.reason or reason})"
    return str(reason) or type(reason).__name__


def normalize_url(text: str) -> str:
    """`host:8000`, `http://host:8000/`, `https://host/v1` -> the base URL the OpenAI paths go under."""
    text = text.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{text!r} is not an http(s) URL")
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"
