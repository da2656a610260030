"""Fake engine releases on a fake package index, for the tests of compat/sources.

Tiny `vllm`/`sglang` sdists and wheels (built here, a few .py files each) are published on a local
index: a folder read through file://, or the same folder served by an HTTP server on 127.0.0.1 that
can speak the JSON or HTML simple API and honour Range requests or not, and that logs every request so
the tests can tell what was downloaded.

The server injects faults on request (`Server.inject`): an HTTP status (429, 5xx, optionally with
Retry-After), a connection reset before the answer or in the middle of the body, a body cut short, a
stall before the answer or in the body (no byte for longer than the client's timeout), flipped bytes, a Range ignored or answered with other
bytes than the header says. Each fault hits the next `times` requests whose path contains `match`.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import socket
import struct
import tarfile
import threading
import time
import zipfile
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BLOB = 4 * 1024 * 1024  # the "compiled extension" in a fake wheel: what a ranged read must skip


def package_files(engine: str, version: str) -> dict[str, bytes]:
    """The .py files of a fake engine package, relative to the package's parent folder."""
    return {
        f"{engine}/__init__.py": f"__version__ = {version!r}\n".encode(),
        f"{engine}/config/speculative.py": b"class SpeculativeConfig:\n    method = 'eagle3'\n",
        f"{engine}/model_executor/models/llama.py": b"class LlamaForCausalLM:\n    pass\n",
    }


def make_sdist(engine: str, version: str, top: str | None = None, extra: list[tarfile.TarInfo | tuple[str, bytes]] = ()) -> bytes:
    """A .tar.gz with `<top>/<engine>/**.py` (top defaults to `<engine>-<version>`), a setup.py and docs."""
    top = top if top is not None else f"{engine}-{version}"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        members = [(f"{engine}-{version}/setup.py", b"from setuptools import setup\nsetup()\n"),
                   (f"{engine}-{version}/README.md", b"# fake\n")]
        members += [(f"{top}/{name}", data) for name, data in package_files(engine, version).items()]
        members += [(f"{top}/{engine}/py.typed", b""), (f"{top}/{engine}/kernels/table.json", b"{}")]
        for item in [*members, *extra]:
            if isinstance(item, tarfile.TarInfo):
                tar.addfile(item)
            else:
                name, data = item
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def make_wheel(engine: str, version: str, extra: dict[str, bytes] | None = None, modules: int = 0) -> bytes:
    """A wheel: the .py files, then a large stored "extension", then more .py files and the dist-info.

    `modules` adds that many 16 kB modules (incompressible) before the extension, as real wheels have
    hundreds of modules: reading them one by one would take hundreds of requests.
    """
    files = {**package_files(engine, version), **filler_modules(engine, modules)}
    names = sorted(files)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(names[0], files[names[0]])
        archive.writestr(zipfile.ZipInfo(f"{engine}/_C.abi3.so"), os.urandom(BLOB), compress_type=zipfile.ZIP_STORED)
        for name in names[1:]:
            archive.writestr(name, files[name])
        for name, data in (extra or {}).items():
            archive.writestr(zipfile.ZipInfo(name), data)
        archive.writestr(f"{engine}-{version}.dist-info/METADATA", f"Name: {engine}\nVersion: {version}\n")
    return buffer.getvalue()


def filler_modules(engine: str, count: int) -> dict[str, bytes]:
    return {f"{engine}/models/m{i:03d}.py": b"DATA = %r\n" % base64.b64encode(os.urandom(12 * 1024)) for i in range(count)}


class Index:
    """A simple-API index in a folder: `simple/<project>/index.html` (+ `index.json`), `files/<filename>`."""

    def __init__(self, root: Path):
        self.root = root
        self.projects: dict[str, list[dict]] = {}

    @property
    def file_url(self) -> str:
        return (self.root / "simple").as_uri() + "/"

    def publish(self, project: str, filename: str, data: bytes, *, yanked: bool = False, sha256: str | None = None, size: int | None = None) -> None:
        (self.root / "files").mkdir(parents=True, exist_ok=True)
        (self.root / "files" / filename).write_bytes(data)
        self.projects.setdefault(project, []).append({
            "filename": filename, "url": f"../../files/{filename}", "size": len(data) if size is None else size,
            "hashes": {"sha256": sha256 or hashlib.sha256(data).hexdigest()}, "yanked": yanked,
        })
        self._write(project)

    def _write(self, project: str) -> None:
        folder = self.root / "simple" / project
        folder.mkdir(parents=True, exist_ok=True)
        rows = self.projects[project]
        yanked = ' data-yanked=""'
        links = "\n".join(
            f'<a href="{r["url"]}#sha256={r["hashes"]["sha256"]}"{yanked if r["yanked"] else ""}>{r["filename"]}</a><br/>'
            for r in rows
        )
        (folder / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}\n</body></html>\n")
        (folder / "index.json").write_text(json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": rows}))


FAULTS = ("429", "500", "502", "503", "504", "reset-early", "stall-early", "reset", "truncate", "stall", "corrupt",
          "ignore-range", "wrong-range")


@dataclass
class Fault:
    kind: str  # one of FAULTS
    match: str  # a substring of the request path
    times: int = 1  # the next `times` matching requests
    at: float = 0.5  # where in the body a reset, cut, stall or flipped byte falls (fraction)
    retry_after: str | None = None  # for 429/503


class Server:
    """Serves an Index over HTTP; logs (method, path, range header, status, body bytes, fault) per request."""

    def __init__(self, index: Index, *, ranges: bool = True, json_api: bool = True, delay: float = 0.0, auth: str | None = None,
                 stall: float = 30.0, tls=None):
        self.index, self.ranges, self.json_api, self.delay, self.auth = index, ranges, json_api, delay, auth
        self.stall = stall  # how long a stall lasts (unless the server closes first)
        self.log: list[dict] = []
        self.faults: list[Fault] = []
        self._closing = threading.Event()
        self._faults_lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                entry = {"path": self.path, "range": self.headers.get("Range"), "status": None, "sent": 0, "fault": None}
                server.log.append(entry)
                self.fault = server._take(self.path)
                entry["fault"] = self.fault and self.fault.kind
                if server.auth and self.headers.get("Authorization") != server.auth:
                    return self._reply(entry, 401, b"unauthorized", "text/plain")
                if self.fault and self.fault.kind.isdigit():
                    extra = {"Retry-After": self.fault.retry_after} if self.fault.retry_after else {}
                    return self._reply(entry, int(self.fault.kind), b"busy", "text/plain", extra, faulty=False)
                if self.fault and self.fault.kind == "reset-early":
                    return self._reset()
                if self.fault and self.fault.kind == "stall-early":  # no answer at all, then the line drops
                    server._closing.wait(server.stall)
                    return self._reset()
                path = self.path.split("?")[0]
                if path.startswith("/simple/"):
                    folder = server.index.root / path.strip("/")
                    wants_json = server.json_api and "vnd.pypi.simple.v1+json" in (self.headers.get("Accept") or "")
                    page = folder / ("index.json" if wants_json else "index.html")
                    if not page.is_file():
                        return self._reply(entry, 404, b"not found", "text/plain")
                    kind = "application/vnd.pypi.simple.v1+json" if wants_json else "text/html"
                    return self._reply(entry, 200, page.read_bytes(), kind)
                target = server.index.root / path.lstrip("/")
                if not target.is_file():
                    return self._reply(entry, 404, b"not found", "text/plain")
                data = target.read_bytes()
                if server.delay:
                    time.sleep(server.delay)
                match = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range") or "")
                kind = self.fault and self.fault.kind
                if server.ranges and match and kind != "ignore-range":
                    first, last = match.groups()
                    if first:
                        start, end = int(first), min(int(last) if last else len(data) - 1, len(data) - 1)
                    else:
                        start, end = max(0, len(data) - int(last)), len(data) - 1
                    body, said = data[start:end + 1], start
                    if kind == "wrong-range":  # other bytes than asked for, under a header that lies (at >= 0.5) or not
                        shift = 4096 if start >= 4096 else -min(4096, len(data) - 1 - end)
                        actual = start - shift
                        body = data[actual:actual + end - start + 1]
                        said = start if self.fault.at >= 0.5 else actual
                    return self._reply(entry, 206, body, "application/octet-stream",
                                       {"Content-Range": f"bytes {said}-{said + len(body) - 1}/{len(data)}"})
                return self._reply(entry, 200, data, "application/octet-stream", {"Accept-Ranges": "none"})

            def _reset(self):
                """Close the connection with a TCP reset, nothing answered."""
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True

            def _reply(self, entry, status, body, kind, headers=None, faulty=True):
                entry["status"] = status
                fault = self.fault if faulty else None
                cut = int(len(body) * fault.at) if fault else len(body)
                if fault and fault.kind == "corrupt":
                    at = min(cut, len(body) - 1)
                    body = body[:at] + bytes([body[at] ^ 0xFF]) + body[at + 1:]
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    stop = cut if fault and fault.kind in ("reset", "truncate", "stall") else len(body)
                    for offset in range(0, stop, 65536):
                        piece = body[offset:min(offset + 65536, stop)]
                        self.wfile.write(piece)
                        entry["sent"] += len(piece)
                    self.wfile.flush()
                    if fault and fault.kind == "stall":
                        server._closing.wait(server.stall)
                    if fault and fault.kind == "reset":
                        self._reset()
                    elif fault and fault.kind in ("truncate", "stall"):
                        self.connection.shutdown(socket.SHUT_RDWR)
                        self.close_connection = True
                except (BrokenPipeError, ConnectionResetError, OSError):  # the client stopped reading (a 200 to a Range request)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.scheme = "http"
        if tls is not None:  # an ssl.SSLContext with the server's certificate: https
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
            self.scheme = "https"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def inject(self, kind: str, match: str, times: int = 1, *, at: float = 0.5, retry_after: str | None = None) -> None:
        assert kind in FAULTS, kind
        with self._faults_lock:
            self.faults.append(Fault(kind, match, times, at, retry_after))

    def _take(self, path: str) -> Fault | None:
        with self._faults_lock:
            for fault in self.faults:
                if fault.times > 0 and fault.match in path:
                    fault.times -= 1
                    return fault
        return None

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.httpd.server_address[1]}/simple/"

    def requests_for(self, filename: str) -> list[dict]:
        return [e for e in self.log if e["path"].endswith("/" + filename)]

    def close(self):
        self._closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def version_of(tree) -> str:
    return re.search(r"__version__ = '(.*)'", tree.text(f"{tree.engine}/__init__.py")).group(1)
