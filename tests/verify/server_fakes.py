"""Small HTTP servers on 127.0.0.1 for the client tests: hostile ones (huge, endless, slow, not JSON, 401) and a
modelled OpenAI-compatible engine whose endpoints and metric names are given by the test (read from a real
release's source by compat's probes). Each runs in a thread of the test process and is shut down by the test.

What is modelled, and only modelled: the engine's behaviour (the text it streams, its timing, how its counters
move). What is not: the paths, keys and metric names, which each test reads from the release it models.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handler = Callable[["Request"], None]


class Request:
    def __init__(self, handler: BaseHTTPRequestHandler, body: bytes):
        self.h, self.body = handler, body
        self.path = handler.path
        self.headers = handler.headers

    def json(self) -> Any:
        return json.loads(self.body or b"null")

    def send(self, status: int, body: bytes | str | dict | list, content_type: str = "application/json",
             headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body.encode() if isinstance(body, str) else body
        self.h.send_response(status)
        self.h.send_header("Content-Type", content_type)
        self.h.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.h.send_header(k, v)
        self.h.end_headers()
        self.h.wfile.write(data)

    def start_chunked(self, content_type: str = "text/event-stream") -> None:
        self.h.send_response(200)
        self.h.send_header("Content-Type", content_type)
        self.h.send_header("Transfer-Encoding", "chunked")
        self.h.end_headers()

    def chunk(self, data: bytes) -> None:
        self.h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.h.wfile.flush()

    def end_chunked(self) -> None:
        self.h.wfile.write(b"0\r\n\r\n")
        self.h.wfile.flush()


class FakeServer:
    """routes: {"GET /path": handler, "POST /path": handler}; a path's query string is ignored for matching."""

    def __init__(self, routes: dict[str, Handler]):
        self.routes = routes
        self.calls: list[str] = []
        server = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                route = f"{method} {self.path.split('?')[0]}"
                server.calls.append(f"{method} {self.path}")
                handler = server.routes.get(route)
                try:
                    if handler is None:
                        Request(self, body).send(404, {"detail": "Not Found"})
                    else:
                        handler(Request(self, body))
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def sse(req: Request, events: list[dict], delay: float = 0.0) -> None:
    """Stream `events` as server-sent events, then [DONE]."""
    req.start_chunked()
    for event in events:
        if delay:
            time.sleep(delay)
        req.chunk(b"data: " + json.dumps(event).encode() + b"\n\n")
    req.chunk(b"data: [DONE]\n\n")
    req.end_chunked()


def chat_events(model: str, pieces: list[str], usage_tokens: int | None) -> list[dict]:
    """What an OpenAI-compatible server streams for one chat completion (role chunk, content, finish, usage)."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": model}
    events = [base | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    events += [base | {"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
    events[-1]["choices"][0]["finish_reason"] = "length"
    if usage_tokens is not None:
        events.append(base | {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": usage_tokens,
                                                        "total_tokens": 10 + usage_tokens}})
    return events


def prometheus_text(series: dict[str, float | dict[tuple[tuple[str, str], ...], float]], kinds: dict[str, str]) -> str:
    """A /metrics answer in Prometheus text format: name -> value, or name -> {labels: value}."""
    lines = []
    for name, value in series.items():
        lines.append(f"# HELP {name} modelled")
        lines.append(f"# TYPE {name} {kinds.get(name, 'gauge')}")
        items = value.items() if isinstance(value, dict) else [((), value)]
        for labels, v in items:
            block = ",".join(f'{k}="{val}"' for k, val in (("model_name", "m"), *labels))
            lines.append(f"{name}{{{block}}} {float(v)}")
    return "\n".join(lines) + "\n"
