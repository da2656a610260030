"""Surface: `compat verify --server URL` against a vLLM server that answers one of its endpoints badly.

The server is the modelled vLLM 0.32.0 of tests/verify (its paths and metric names read from the real release by
compat's probes), on 127.0.0.1; one endpoint, drawn at random, is replaced by a hostile answer: a huge or endless
body, a dribble, a hang, a body cut by a closed connection, broken / deep / huge-number / wrong-type JSON, random
bytes, odd statuses and redirect loops, and on /metrics counters that lie (NaN, infinite, negative, going
backwards, more accepted than drafted, a million series). The answer must be bounded (time and memory), one
clear error or a verdict, never a traceback.
"""

from __future__ import annotations

import json
import random
import socket
import time
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

from modelled_engine import Behaviour, ModelledEngine
from server_fakes import Request
from surfaces import Case, surface

REQUEST_TIMEOUT = 3  # --request-timeout: a stalled answer must be given up within it
ABANDON_S = 40.0  # a hostile handler stops writing after this (the client is long gone by then)


@lru_cache(maxsize=1)
def vllm_report() -> dict:
    from compat.report import build_report
    from compat.sources import open_tree

    return build_report(open_tree("vllm==0.32.0", progress=False))


class Captured(Request):
    """A Request whose answer is kept, not sent: the valid answer a hostile one is made from."""

    def __init__(self, real: Request):
        self.h, self.body, self.path, self.headers = real.h, real.body, real.path, real.headers
        self.status, self.content_type, self.data = 200, "application/json", b""

    def send(self, status, body, content_type="application/json", headers=None):
        self.status, self.content_type = status, content_type
        self.data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body.encode() if isinstance(body, str) else body

    def start_chunked(self, content_type="text/event-stream"):
        self.content_type = content_type

    def chunk(self, data):
        self.data += data

    def end_chunked(self):
        pass


def _raw(req: Request, status: int, headers: dict[str, str]) -> None:
    req.h.send_response(status)
    for key, value in headers.items():
        req.h.send_header(key, value)
    req.h.end_headers()


def _write_for_a_while(req: Request, piece: bytes, pause: float = 0.0, chunked: bool = False) -> None:
    """Write `piece` again and again until the client hangs up (or ABANDON_S)."""
    end = time.monotonic() + ABANDON_S
    while time.monotonic() < end:
        req.h.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if chunked else piece)
        req.h.wfile.flush()
        if pause:
            time.sleep(pause)


# -- hostile answers: (req, the valid answer, rng) -------------------------------------------------
def huge_announced(req: Request, valid: Captured, rng: random.Random) -> None:
    _raw(req, 200, {"Content-Type": valid.content_type, "Content-Length": str(10**12)})
    _write_for_a_while(req, b"[" * 65536 if rng.random() < 0.5 else b"0" * 65536)


def endless_chunked(req: Request, valid: Captured, rng: random.Random) -> None:
    _raw(req, 200, {"Content-Type": valid.content_type, "Transfer-Encoding": "chunked"})
    _write_for_a_while(req, (valid.data or b"x") * rng.randint(1, 50), chunked=True)


def dribble(req: Request, valid: Captured, rng: random.Random) -> None:
    _raw(req, 200, {"Content-Type": valid.content_type, "Content-Length": str(len(valid.data) + 10**6)})
    _write_for_a_while(req, valid.data[:1] or b" ", pause=rng.choice([0.2, 0.5, 1.0]))


def hang(req: Request, valid: Captured, rng: random.Random) -> None:
    if rng.random() < 0.5:
        _raw(req, 200, {"Content-Type": valid.content_type, "Content-Length": str(len(valid.data))})
    time.sleep(ABANDON_S)


def cut(req: Request, valid: Captured, rng: random.Random) -> None:
    _raw(req, valid.status, {"Content-Type": valid.content_type, "Content-Length": str(len(valid.data) + 100)})
    req.h.wfile.write(valid.data[: rng.randint(0, len(valid.data))])
    req.h.wfile.flush()
    req.h.connection.shutdown(socket.SHUT_RDWR)


def broken_json(req: Request, valid: Captured, rng: random.Random) -> None:
    data = bytearray(valid.data or b"{}")
    for _ in range(rng.randint(1, 8)):
        where = rng.randrange(len(data))
        kind = rng.random()
        if kind < 0.4:
            data[where] = rng.choice(b'{}[]",:\\\x00\xff0e-')
        elif kind < 0.7:
            del data[where:where + rng.randint(1, 40)]
        else:
            data[where:where] = rng.choice([b"NaN", b"-Infinity", b'"\\ud800"', b"\xc3\x28", b"1e999999", b"[" * 50])
        if not data:
            data = bytearray(b"{")
    req.send(valid.status, bytes(data), valid.content_type)


def deep_nesting(req: Request, valid: Captured, rng: random.Random) -> None:
    depth = rng.choice([1000, 100_000, 1_000_000])
    req.send(200, b"[" * depth + b"]" * (depth if rng.random() < 0.5 else 0), valid.content_type)


def huge_number(req: Request, valid: Captured, rng: random.Random) -> None:
    number = rng.choice([b"9" * 100_000, b"1e999999", b"-" + b"9" * 5000, b"1" + b"0" * 4400 + b".5"])
    text = valid.data.decode("utf-8", "replace")
    if valid.content_type.startswith("text/plain"):  # /metrics: a sample's value
        lines = text.splitlines()
        samples = [i for i, line in enumerate(lines) if line and not line.startswith("#")]
        if samples:
            i = rng.choice(samples)
            lines[i] = lines[i].rsplit(" ", 1)[0] + " " + number.decode()
        req.send(200, "\n".join(lines) + "\n", valid.content_type)
        return
    req.send(200, b'{"data": [{"id": ' + number + b'}], "version": ' + number + b"}", valid.content_type)


def wrong_type(req: Request, valid: Captured, rng: random.Random) -> None:
    value = rng.choice([None, 0, -1, 1.5, "text", [], [None], {}, {"data": None}, {"data": "x"}, {"data": [1, 2]},
                        {"version": None}, {"version": [1]}, {"vllm_config": None}, {"vllm_config": 5},
                        {"vllm_config": {"speculative_config": "eagle3"}}, {"object": "list", "data": [{"id": None}]}])
    req.send(200, json.dumps(value).encode(), valid.content_type)


def random_bytes(req: Request, valid: Captured, rng: random.Random) -> None:
    req.send(200, bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 100, 70_000]))), valid.content_type)


def odd_status(req: Request, valid: Captured, rng: random.Random) -> None:
    status = rng.choice([204, 301, 302, 307, 400, 403, 404, 405, 418, 429, 500, 502, 503, 504])
    headers = {"Location": req.path} if status in (301, 302, 307) else {"Retry-After": "1"} if status in (429, 503) else {}
    req.send(status, rng.choice([b"", b"<html>oops</html>", b'{"error": "no"}', valid.data[:200]]), valid.content_type, headers)


def lying_counters(req: Request, valid: Captured, rng: random.Random) -> None:
    """/metrics whose numbers lie: NaN, infinite, negative, backwards, impossible ratios, a million series."""
    lines = valid.data.decode().splitlines()
    out = []
    lie = rng.choice(["nan", "inf", "negative", "backwards", "huge", "accepted-above-drafts", "million-series",
                      "duplicate", "labels"])
    for line in lines:
        if not line or line.startswith("#"):
            out.append(line)
            continue
        name, value = line.rsplit(" ", 1)
        v = float(value)
        if lie == "nan":
            v_text = rng.choice(["NaN", "nan", "+NaN"])
        elif lie == "inf":
            v_text = rng.choice(["+Inf", "-Inf", "inf"])
        elif lie == "negative":
            v_text = str(-abs(v) - rng.randint(1, 10**6))
        elif lie == "backwards":
            v_text = str(v * rng.random() if rng.random() < 0.5 else 0.0)
        elif lie == "huge":
            v_text = rng.choice(["1e308", "1.7976931348623157e308", str(2**70)])
        elif lie == "accepted-above-drafts":
            v_text = str(v * 1000 if "accepted" in name else v)
        else:
            v_text = value
        out.append(f"{name} {v_text}")
        if lie == "duplicate":
            out.append(f"{name} {rng.random() * 10**6}")
        if lie == "labels" and "{" in name:
            out.append(name.replace("{", '{evil="a\\"b\\\\c\\n",', 1) + " 1")
    if lie == "million-series":
        sample = next((line.rsplit(" ", 1)[0] for line in lines if line and not line.startswith("#") and "{" in line), "x{a=\"b\"}")
        out += [sample.replace("{", f'{{i="{i}",', 1) + " 1" for i in range(rng.choice([10_000, 1_000_000]))]
    req.send(200, "\n".join(out) + "\n", valid.content_type)


def sse_garbage(req: Request, valid: Captured, rng: random.Random) -> None:
    """A chat stream that breaks the protocol: events not JSON, no [DONE], a 20 MB event, lying usage."""
    events = [e for e in valid.data.split(b"\n\n") if e]
    kind = rng.choice(["not-json", "no-done", "giant-event", "lying-usage", "no-data-prefix", "only-done", "nul"])
    if kind == "not-json":
        events[rng.randrange(len(events))] = b"data: {not json"
    elif kind == "no-done":
        events = [e for e in events if b"[DONE]" not in e]
    elif kind == "giant-event":
        events.insert(1, b'data: {"choices": [{"index": 0, "delta": {"content": "' + b"A" * 20_000_000 + b'"}}]}')
    elif kind == "lying-usage":
        usage = rng.choice([-5, 10**30, "many", None, 1e308])
        events.insert(-1, b"data: " + json.dumps({"choices": [], "usage": {"completion_tokens": usage, "prompt_tokens": usage}}).encode())
    elif kind == "no-data-prefix":
        events = [e.replace(b"data: ", b"", 1) for e in events]
    elif kind == "only-done":
        events = [b"data: [DONE]"]
    else:
        events = [e.replace(b"content", b"con\x00tent") for e in events]
    req.start_chunked()
    for event in events:
        req.chunk(event + b"\n\n")
    req.end_chunked()


ANY = [huge_announced, endless_chunked, dribble, hang, cut, broken_json, deep_nesting, huge_number, wrong_type,
       random_bytes, odd_status]
BY_ROUTE_EXTRA: dict[str, list[Callable]] = {"GET /metrics": [lying_counters] * 4, "POST /v1/chat/completions": [sse_garbage] * 3}


def hostile_route(handler: Callable[[Request], None], answer: Callable, rng: random.Random) -> Callable[[Request], None]:
    def run(req: Request) -> None:
        valid = Captured(req)
        handler(valid)
        answer(req, valid, rng)
    return run


@surface("verify --server")
def verify_server(rng: random.Random, workdir: Path) -> Iterator[Case]:
    engine = ModelledEngine(vllm_report(), Behaviour(per_position=(0.7, 0.5, 0.3)))
    server = engine.serve()
    route = rng.choice(sorted(server.routes))
    answer = rng.choice(ANY + BY_ROUTE_EXTRA.get(route, []))
    server.routes[route] = hostile_route(server.routes[route], answer, random.Random(rng.random()))
    with server:
        yield Case(
            argv=["verify", "--server", server.url, "--engine", "vllm==0.32.0", "--offline", "--num-prompts", "2",
                  "--max-tokens", "4", "--concurrency", "1", "--request-timeout", str(REQUEST_TIMEOUT), "--json"],
            what=f"{route}: {answer.__name__}", deadline=45.0)
