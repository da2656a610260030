"""compat.sources.released: fetching a release's Python source from a package index into the cache.

The unit tests publish tiny fake `vllm`/`sglang` sdists and wheels (built here, a few .py files each)
on a local index: a folder read through file://, or the same folder served by an HTTP server on
127.0.0.1 that can speak the JSON or HTML simple API and honour Range requests or not, and that logs
every request so the tests can tell what was downloaded. Two tests marked `network` fetch real
vLLM releases from the real index.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import multiprocessing
import os
import re
import tarfile
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from compat.errors import EXIT_SOURCE, SourceError
from compat.sources import open_tree
from compat.sources import released
from compat.sources.released import cache_root, fetch_release, index_urls, list_releases

BLOB = 4 * 1024 * 1024  # the "compiled extension" in a fake wheel: what a ranged read must skip


# -- building fake releases -------------------------------------------------------------------


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


class Server:
    """Serves an Index over HTTP; logs (method, path, range header, status, body bytes) per request."""

    def __init__(self, index: Index, *, ranges: bool = True, json_api: bool = True, delay: float = 0.0, auth: str | None = None):
        self.index, self.ranges, self.json_api, self.delay, self.auth = index, ranges, json_api, delay, auth
        self.log: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                entry = {"path": self.path, "range": self.headers.get("Range"), "status": None, "sent": 0}
                server.log.append(entry)
                if server.auth and self.headers.get("Authorization") != server.auth:
                    return self._reply(entry, 401, b"unauthorized", "text/plain")
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
                if server.ranges and match:
                    first, last = match.groups()
                    if first:
                        start, end = int(first), min(int(last) if last else len(data) - 1, len(data) - 1)
                    else:
                        start, end = max(0, len(data) - int(last)), len(data) - 1
                    return self._reply(entry, 206, data[start:end + 1], "application/octet-stream",
                                       {"Content-Range": f"bytes {start}-{end}/{len(data)}"})
                return self._reply(entry, 200, data, "application/octet-stream", {"Accept-Ranges": "none"})

            def _reply(self, entry, status, body, kind, headers=None):
                entry["status"] = status
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    for offset in range(0, len(body), 65536):
                        self.wfile.write(body[offset:offset + 65536])
                        entry["sent"] += len(body[offset:offset + 65536])
                except (BrokenPipeError, ConnectionResetError):  # the client stopped reading (a 200 to a Range request)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/simple/"

    def requests_for(self, filename: str) -> list[dict]:
        return [e for e in self.log if e["path"].endswith("/" + filename)]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """No pip config, index variables or user cache of this machine leak into the tests."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CERT", "VIRTUAL_ENV"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    released._CREDENTIALS.clear()


@pytest.fixture
def index(tmp_path) -> Index:
    """vllm: 0.9.0 (sdist), 0.10.0 (sdist + wheel), 0.10.1 (yanked), 0.11.0rc1 (pre-release), 0.11.0.dev3 (dev)."""
    index = Index(tmp_path / "index")
    index.publish("vllm", "vllm-0.9.0.tar.gz", make_sdist("vllm", "0.9.0"))
    index.publish("vllm", "vllm-0.10.0.tar.gz", make_sdist("vllm", "0.10.0"))
    index.publish("vllm", "vllm-0.10.0-cp38-abi3-manylinux1_x86_64.whl", make_wheel("vllm", "0.10.0"))
    index.publish("vllm", "vllm-0.10.1.tar.gz", make_sdist("vllm", "0.10.1"), yanked=True)
    index.publish("vllm", "vllm-0.11.0rc1.tar.gz", make_sdist("vllm", "0.11.0rc1"))
    index.publish("vllm", "vllm-0.11.0.dev3.tar.gz", make_sdist("vllm", "0.11.0.dev3"))
    return index


@pytest.fixture
def server_factory():
    servers = []

    def start(index: Index, **options) -> Server:
        servers.append(Server(index, **options))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def cache(tmp_path) -> Path:
    return tmp_path / "cache"


def version_of(tree) -> str:
    return re.search(r"__version__ = '(.*)'", tree.text(f"{tree.engine}/__init__.py")).group(1)


# -- version selection ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["file", "http-json", "http-html"])
def test_latest_is_the_highest_final_release_on_every_kind_of_index(kind, index, server_factory, cache):
    url = index.file_url if kind == "file" else server_factory(index, json_api=kind == "http-json").url
    tree = fetch_release("vllm", "latest", cache_dir=cache, index_url=url, progress=False)
    # 0.10.1 is yanked, 0.11.0rc1 and 0.11.0.dev3 are not final
    assert tree.version == "0.10.0" and version_of(tree) == "0.10.0"
    assert tree.exists("vllm/config/speculative.py")
    assert tree.source.kind == "released" and tree.source.detail["index"] == url
    assert list_releases("vllm", index_url=url, cache_dir=cache) == ["0.9.0", "0.10.0"]


def test_http_index_is_asked_for_json_then_html(index, server_factory, cache):
    server = server_factory(index, json_api=False)
    fetch_release("vllm", "latest", cache_dir=cache, index_url=server.url, progress=False)
    page = [e for e in server.log if e["path"] == "/simple/vllm/"]
    assert len(page) == 1 and page[0]["status"] == 200
    listing = json.loads((cache / "index" / "vllm.json").read_text())
    by_name = {row["filename"]: row for row in listing["files"]}
    # from the HTML: the #sha256= fragment and data-yanked
    assert by_name["vllm-0.10.1.tar.gz"]["yanked"] is True
    assert by_name["vllm-0.9.0.tar.gz"]["sha256"] == index.projects["vllm"][0]["hashes"]["sha256"]
    assert "#" not in by_name["vllm-0.9.0.tar.gz"]["url"]


@pytest.mark.parametrize(
    "specifier, expected",
    [
        (">=0.9,<0.10", "0.9.0"),
        ("<0.11", "0.10.0"),
        ("~=0.9", "0.10.0"),
        (">=0.11.0rc1", "0.11.0rc1"),  # names a pre-release: pre-releases allowed
        ("==0.11.0rc1", "0.11.0rc1"),
        ("==0.11.0.dev3", "0.11.0.dev3"),
        ("==0.10.1", "0.10.1"),  # yanked, but pinned with ==
        ("==0.10", "0.10.0"),  # PEP 440: 0.10 == 0.10.0
    ],
)
def test_specifier_picks_the_highest_match(specifier, expected, index, cache):
    tree = fetch_release("vllm", specifier, cache_dir=cache, index_url=index.file_url, progress=False)
    assert tree.version == expected and version_of(tree) == expected


def test_no_match_is_a_source_error_naming_the_newest_and_closest(index, cache):
    with pytest.raises(SourceError) as caught:
        fetch_release("vllm", "==0.99.0", cache_dir=cache, index_url=index.file_url, progress=False)
    assert caught.value.exit_code == EXIT_SOURCE == 3
    message = str(caught.value)
    assert f"no release of vllm matches ==0.99.0 on {index.file_url} (newest: 0.10.0)" in message
    assert "closest available: 0.9.0, 0.10.0" in message


def test_yanked_and_pre_releases_are_explained_when_they_are_all_that_matches(index, cache):
    with pytest.raises(SourceError, match=r"0\.10\.1 is yanked \(pin it with ==0\.10\.1"):
        fetch_release("vllm", ">0.10.0,<0.10.5", cache_dir=cache, index_url=index.file_url, progress=False)
    with pytest.raises(SourceError, match=r"0\.11\.0rc1 is a pre-release"):
        fetch_release("vllm", ">0.10.5", cache_dir=cache, index_url=index.file_url, progress=False)


def test_open_tree_parses_the_engine_spec_and_fetches(index, cache, monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", index.file_url)
    tree = open_tree("vllm==0.9.0", cache_dir=cache, progress=False)
    assert tree.version == "0.9.0" and tree.root == cache / "releases" / "vllm" / "0.9.0"


# -- artifacts --------------------------------------------------------------------------------


def test_sdist_is_preferred_over_a_wheel_and_only_package_py_files_are_kept(index, server_factory, cache):
    server = server_factory(index)
    tree = fetch_release("vllm", "==0.10.0", cache_dir=cache, index_url=server.url, progress=False)
    assert tree.source.detail["artifact"] == "vllm-0.10.0.tar.gz"
    assert tree.source.detail["verified"] == "sha256"
    assert not server.requests_for("vllm-0.10.0-cp38-abi3-manylinux1_x86_64.whl")
    written = sorted(p.relative_to(tree.root).as_posix() for p in tree.root.rglob("*") if p.is_file())
    assert written == ["release.json", *sorted(package_files("vllm", "0.10.0"))]  # no setup.py, README, py.typed, json
    record = json.loads((tree.root / "release.json").read_text())
    assert record["version"] == "0.10.0" and record["artifact"] == "vllm-0.10.0.tar.gz"
    assert record["sha256"] == hashlib.sha256((index.root / "files" / "vllm-0.10.0.tar.gz").read_bytes()).hexdigest()
    assert record["url"].endswith("/files/vllm-0.10.0.tar.gz") and record["fetched_at"]


def test_sdist_with_the_package_under_python_takes_the_shallowest(tmp_path, cache):
    index = Index(tmp_path / "index")
    decoy = [("sglang-0.5.0/3rdparty/vendored/sglang/__init__.py", b"DECOY = 1\n"),
             ("sglang-0.5.0/3rdparty/vendored/sglang/decoy.py", b"DECOY = 1\n")]
    index.publish("sglang", "sglang-0.5.0.tar.gz", make_sdist("sglang", "0.5.0", top="sglang-0.5.0/python", extra=decoy))
    tree = fetch_release("sglang", "latest", cache_dir=cache, index_url=index.file_url, progress=False)
    assert tree.engine == "sglang" and tree.version == "0.5.0"
    assert sorted(tree.files()) == sorted(package_files("sglang", "0.5.0"))
    assert b"DECOY" not in tree.read_bytes("sglang/__init__.py")


def test_wheel_only_release_is_read_with_range_requests(tmp_path, server_factory, cache):
    index = Index(tmp_path / "index")
    wheel = make_wheel("vllm", "0.15.0", modules=100)
    index.publish("vllm", "vllm-0.15.0-cp38-abi3-manylinux_2_31_x86_64.whl", wheel)
    server = server_factory(index, ranges=True)
    tree = fetch_release("vllm", "==0.15.0", cache_dir=cache, index_url=server.url, progress=False)
    expected = {**package_files("vllm", "0.15.0"), **filler_modules("vllm", 100)}
    assert sorted(tree.files()) == sorted(expected)
    assert tree.read_bytes("vllm/config/speculative.py") == expected["vllm/config/speculative.py"]
    assert not tree.exists("vllm/_C.abi3.so")
    requests = server.requests_for("vllm-0.15.0-cp38-abi3-manylinux_2_31_x86_64.whl")
    assert requests and all(r["status"] == 206 and r["range"] for r in requests)
    served = sum(r["sent"] for r in requests)
    assert served <= len(wheel) - BLOB + released._TAIL_BYTES  # all but the 4 MB extension, give or take the first read
    assert tree.source.detail["downloaded_bytes"] == served
    assert "ranged read" in tree.source.detail["verified"]
    # the tail, then the 100+ modules in front of the extension coalesced into one or two requests
    assert tree.source.detail["range_requests"] == len(requests) <= 4


def test_wheel_only_release_without_range_support_is_downloaded_whole_and_verified(tmp_path, server_factory, cache):
    index = Index(tmp_path / "index")
    wheel = make_wheel("vllm", "0.15.0")
    index.publish("vllm", "vllm-0.15.0-cp38-abi3-manylinux_2_31_x86_64.whl", wheel)
    server = server_factory(index, ranges=False)
    tree = fetch_release("vllm", "==0.15.0", cache_dir=cache, index_url=server.url, progress=False)
    assert sorted(tree.files()) == sorted(package_files("vllm", "0.15.0"))
    assert tree.source.detail["downloaded_bytes"] == len(wheel)
    assert tree.source.detail["verified"] == "sha256"
    assert not list((cache / "releases" / "vllm" / "0.15.0").glob("*.part"))


def test_wheel_whose_size_differs_from_the_index_is_downloaded_whole_and_verified(tmp_path, server_factory, cache):
    index = Index(tmp_path / "index")
    wheel = make_wheel("vllm", "0.15.0")
    index.publish("vllm", "vllm-0.15.0-py3-none-any.whl", wheel, size=len(wheel) + 10)
    server = server_factory(index, ranges=True)
    tree = fetch_release("vllm", "==0.15.0", cache_dir=cache, index_url=server.url, progress=False)
    assert tree.source.detail["verified"] == "sha256" and tree.source.detail["downloaded_bytes"] == len(wheel)
    assert server.requests_for("vllm-0.15.0-py3-none-any.whl")[-1]["range"] is None


def test_smallest_wheel_is_chosen(tmp_path, server_factory, cache):
    index = Index(tmp_path / "index")
    index.publish("vllm", "vllm-0.15.1-cp38-abi3-manylinux_2_31_x86_64.whl", make_wheel("vllm", "0.15.1"))
    index.publish("vllm", "vllm-0.15.1-cp38-abi3-manylinux_2_31_aarch64.whl", _small_wheel("vllm", "0.15.1"))
    tree = fetch_release("vllm", "latest", cache_dir=cache, index_url=index.file_url, progress=False)
    assert tree.source.detail["artifact"] == "vllm-0.15.1-cp38-abi3-manylinux_2_31_aarch64.whl"


def _small_wheel(engine: str, version: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in package_files(engine, version).items():
            archive.writestr(name, data)
    return buffer.getvalue()


# -- hostile archives -------------------------------------------------------------------------


def _link(name: str, target: str, kind=tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def test_sdist_members_outside_the_tree_and_links_are_skipped(tmp_path, cache):
    index = Index(tmp_path / "index")
    hostile = [
        ("../../vllm/evil.py", b"EVIL\n"),
        ("/tmp/vllm/evil_abs.py", b"EVIL\n"),
        ("vllm-0.1.0/vllm/../../../vllm/evil_dots.py", b"EVIL\n"),
        _link("vllm-0.1.0/vllm/linked.py", "/etc/passwd"),
        _link("vllm-0.1.0/vllm/hard.py", "vllm-0.1.0/vllm/__init__.py", tarfile.LNKTYPE),
        _link("vllm-0.1.0/vllm/escape", "../../.."),
        ("vllm-0.1.0/vllm/escape/through_link.py", b"EVIL\n"),
    ]
    index.publish("vllm", "vllm-0.1.0.tar.gz", make_sdist("vllm", "0.1.0", extra=hostile))
    tree = fetch_release("vllm", "==0.1.0", cache_dir=cache, index_url=index.file_url, progress=False)
    on_disk = {p.relative_to(cache).as_posix() for p in cache.rglob("*.py")}
    assert not any("evil" in p or "linked" in p or "hard" in p for p in on_disk)
    assert not any(p.is_symlink() for p in cache.rglob("*"))
    assert not (tmp_path / "vllm").exists() and not Path("/tmp/vllm/evil_abs.py").exists()
    # a regular file below a skipped symlink's name lands in a plain folder inside the tree
    assert (tree.root / "vllm" / "escape" / "through_link.py").resolve().is_relative_to(tree.root)
    assert tree.exists("vllm/config/speculative.py")


def test_wheel_members_outside_the_tree_and_symlinks_are_skipped(tmp_path, server_factory, cache):
    index = Index(tmp_path / "index")
    link = zipfile.ZipInfo("vllm/linked.py")
    link.external_attr = (0o120777 << 16)
    buffer = io.BytesIO(make_wheel("vllm", "0.2.0", extra={"../vllm/evil.py": b"EVIL", "vllm/../../evil2.py": b"EVIL", "/abs/vllm/x.py": b"EVIL"}))
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr(link, "/etc/passwd")
    index.publish("vllm", "vllm-0.2.0-py3-none-any.whl", buffer.getvalue())
    server = server_factory(index)
    tree = fetch_release("vllm", "==0.2.0", cache_dir=cache, index_url=server.url, progress=False)
    assert sorted(tree.files()) == sorted(package_files("vllm", "0.2.0"))
    assert not any("evil" in p.name for p in tmp_path.rglob("*.py") if "index" not in p.parts)
    assert not (tree.root / "vllm" / "linked.py").exists()


# -- cache and offline ------------------------------------------------------------------------


def test_cached_pin_needs_no_network(index, server_factory, cache):
    server = server_factory(index)
    first = fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url=server.url, progress=False)
    assert first.source.detail["cached"] is False
    asked = len(server.log)
    again = fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url="http://127.0.0.1:9/simple/", progress=False)
    assert again.root == first.root and again.source.detail["cached"] is True
    assert again.source.detail["downloaded_bytes"] == 0
    assert len(server.log) == asked


def test_offline_with_a_warm_cache_resolves_latest_and_ranges_from_the_last_listing(index, server_factory, cache):
    server = server_factory(index)
    fetch_release("vllm", "latest", cache_dir=cache, index_url=server.url, progress=False)
    server.close()  # nothing to talk to any more
    tree = fetch_release("vllm", "latest", cache_dir=cache, offline=True, progress=False, index_url=server.url)
    assert tree.version == "0.10.0" and tree.source.detail["cached"] is True
    assert fetch_release("vllm", ">=0.10,<0.11", cache_dir=cache, offline=True, progress=False).version == "0.10.0"
    assert list_releases("vllm", cache_dir=cache, offline=True) == ["0.9.0", "0.10.0"]
    with pytest.raises(SourceError) as caught:  # listed, but never fetched
        fetch_release("vllm", "<0.10", cache_dir=cache, offline=True, progress=False)
    assert caught.value.exit_code == 3
    assert f"offline and vllm==0.9.0 is not in the cache {cache / 'releases' / 'vllm'}" in str(caught.value)


def test_offline_with_a_cold_cache_fails_clearly_without_touching_the_network(index, server_factory, cache):
    server = server_factory(index)
    with pytest.raises(SourceError) as caught:
        fetch_release("vllm", "==0.10.0", cache_dir=cache, offline=True, progress=False, index_url=server.url)
    assert caught.value.exit_code == EXIT_SOURCE
    assert str(caught.value).startswith(f"offline and vllm==0.10.0 is not in the cache {cache / 'releases' / 'vllm'}")
    with pytest.raises(SourceError, match="offline and no index listing of vllm"):
        fetch_release("vllm", "latest", cache_dir=cache, offline=True, progress=False, index_url=server.url)
    assert server.log == []


def test_listing_is_reused_briefly_then_refreshed(index, server_factory, cache, monkeypatch):
    server = server_factory(index)
    pages = lambda: len([e for e in server.log if e["path"] == "/simple/vllm/"])  # noqa: E731
    fetch_release("vllm", "latest", cache_dir=cache, index_url=server.url, progress=False)
    fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url=server.url, progress=False)
    assert pages() == 1
    index.publish("vllm", "vllm-0.12.0.tar.gz", make_sdist("vllm", "0.12.0"))
    # a pin newer than the cached listing refreshes it at once
    assert fetch_release("vllm", "==0.12.0", cache_dir=cache, index_url=server.url, progress=False).version == "0.12.0"
    assert pages() == 2
    monkeypatch.setattr(released, "LISTING_TTL", 0)
    assert list_releases("vllm", index_url=server.url, cache_dir=cache)[-1] == "0.12.0"
    assert pages() == 3


def test_cache_root_default_and_override(tmp_path, monkeypatch):
    assert cache_root(tmp_path / "c") == tmp_path / "c"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "compat"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "compat"


def test_default_cache_is_under_xdg_cache_home(index, tmp_path):
    tree = fetch_release("vllm", "==0.9.0", index_url=index.file_url, progress=False)
    assert tree.root == tmp_path / "xdg-cache" / "compat" / "releases" / "vllm" / "0.9.0"


def test_sha256_mismatch_is_rejected_and_nothing_is_cached(tmp_path, server_factory, cache):
    index = Index(tmp_path / "index")
    index.publish("vllm", "vllm-0.3.0.tar.gz", make_sdist("vllm", "0.3.0"), sha256="0" * 64)
    server = server_factory(index)
    with pytest.raises(SourceError, match="sha256 mismatch") as caught:
        fetch_release("vllm", "==0.3.0", cache_dir=cache, index_url=server.url, progress=False)
    assert caught.value.exit_code == 3 and "vllm-0.3.0.tar.gz" in str(caught.value)
    assert list((cache / "releases" / "vllm").iterdir()) == []  # no release, no temp dir
    with pytest.raises(SourceError, match="not in the cache"):
        fetch_release("vllm", "==0.3.0", cache_dir=cache, offline=True, progress=False)


def test_a_killed_fetch_leaves_no_visible_tree_and_is_cleaned_up(index, cache):
    releases = cache / "releases" / "vllm"
    (releases / ".tmp-0.9.0-killed" / "vllm").mkdir(parents=True)  # what a killed process leaves
    (releases / "0.10.0" / "vllm").mkdir(parents=True)  # a tree under the final name with a broken record
    (releases / "0.10.0" / "vllm" / "__init__.py").write_text("")
    (releases / "0.10.0" / "release.json").write_text('{"version": "0.1')
    tree = fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url=index.file_url, progress=False)
    assert not (releases / ".tmp-0.9.0-killed").exists()
    assert tree.exists("vllm/__init__.py")
    tree = fetch_release("vllm", "==0.10.0", cache_dir=cache, index_url=index.file_url, progress=False)
    assert tree.source.detail["cached"] is False and tree.exists("vllm/config/speculative.py")
    assert sorted(p.name for p in releases.iterdir()) == ["0.10.0", "0.9.0"]


def test_unusable_cache_folder_is_a_source_error(index, tmp_path):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(SourceError, match=r"cannot write vllm 0\.9\.0 into the cache .*a-file") as caught:
        fetch_release("vllm", "==0.9.0", cache_dir=tmp_path / "a-file" / "cache", index_url=index.file_url, progress=False)
    assert caught.value.exit_code == 3 and "--cache-dir" in str(caught.value)


def _fetch_in_child(cache: str, url: str, queue) -> None:
    tree = fetch_release("vllm", "==0.10.0", cache_dir=cache, index_url=url, progress=False)
    queue.put((str(tree.root), tree.source.detail["cached"]))


def test_concurrent_fetches_download_once_and_leave_one_good_tree(index, server_factory, cache):
    server = server_factory(index, delay=0.5)  # the artifact is slow: the two fetches overlap
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    children = [context.Process(target=_fetch_in_child, args=(str(cache), server.url, queue)) for _ in range(2)]
    for child in children:
        child.start()
    for child in children:
        child.join(30)
    assert [child.exitcode for child in children] == [0, 0]
    results = sorted(queue.get(timeout=5) for _ in children)
    assert results[0][0] == results[1][0] == str(cache / "releases" / "vllm" / "0.10.0")
    assert sorted(cached for _, cached in results) == [False, True]  # the second waited, then reused it
    assert len(server.requests_for("vllm-0.10.0.tar.gz")) == 1
    assert sorted(p.name for p in (cache / "releases" / "vllm").iterdir()) == ["0.10.0"]
    tree = fetch_release("vllm", "==0.10.0", cache_dir=cache, offline=True, progress=False)
    assert sorted(tree.files()) == sorted(package_files("vllm", "0.10.0"))


# -- which index ------------------------------------------------------------------------------


def test_pip_index_url_is_honoured(index, server_factory, cache, monkeypatch):
    server = server_factory(index)
    monkeypatch.setenv("PIP_INDEX_URL", server.url)
    tree = fetch_release("vllm", "latest", cache_dir=cache, progress=False)
    assert tree.source.detail["index"] == server.url and server.requests_for("vllm-0.10.0.tar.gz")


def test_pip_config_file_is_honoured_with_missing_file_indexes_skipped(index, server_factory, cache, tmp_path, monkeypatch):
    server = server_factory(index)
    config = tmp_path / "pip.conf"
    config.write_text(
        "[global]\nindex-url = http://127.0.0.1:9/nothing-here/\n"
        f"extra-index-url = file://{tmp_path}/missing/simple\n    {index.file_url}\n"
        f"[install]\nindex-url = {server.url}\n"
    )
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    assert index_urls() == [server.url, f"file://{tmp_path}/missing/simple", index.file_url]
    tree = fetch_release("vllm", "==0.9.0", cache_dir=cache, progress=False)
    assert tree.source.detail["index"] == server.url  # the main index wins for a file both list
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "file:///nonexistent/simple")
    assert index_urls("http://override/simple/") == ["http://override/simple/", "file:///nonexistent/simple"]


def test_extra_index_lists_releases_the_main_index_lacks(index, tmp_path, cache, monkeypatch):
    other = Index(tmp_path / "other")
    other.publish("vllm", "vllm-0.13.0.tar.gz", make_sdist("vllm", "0.13.0"))
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", f"{other.file_url} file:///nonexistent/simple")
    tree = fetch_release("vllm", "latest", cache_dir=cache, index_url=index.file_url, progress=False)
    assert tree.version == "0.13.0" and tree.source.detail["index"] == other.file_url


def test_credentials_in_the_index_url_are_sent_but_never_stored(index, server_factory, cache):
    server = server_factory(index, auth="Basic " + base64.b64encode(b"me:s3cret").decode())
    url = server.url.replace("http://", "http://me:s3cret@")
    tree = fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url=url, progress=False)
    assert tree.version == "0.9.0" and server.requests_for("vllm-0.9.0.tar.gz")[0]["status"] == 200
    stored = "".join(p.read_text() for p in cache.rglob("*.json"))
    assert "s3cret" not in stored and "s3cret" not in json.dumps(tree.source.to_json())


# -- errors and progress ----------------------------------------------------------------------


def test_unreachable_index_is_a_source_error_with_url_and_reason(cache):
    with pytest.raises(SourceError) as caught:
        fetch_release("vllm", "latest", cache_dir=cache, index_url="http://127.0.0.1:9/simple/", progress=False)
    assert caught.value.exit_code == 3
    assert "could not fetch http://127.0.0.1:9/simple/vllm/: connection refused" in str(caught.value)


def test_unknown_host_is_reported_as_dns(cache):
    with pytest.raises(SourceError, match=r"could not fetch http://no-such-host\.invalid/simple/vllm/: cannot resolve the host name"):
        fetch_release("vllm", "latest", cache_dir=cache, index_url="http://no-such-host.invalid/simple/", progress=False)


def test_project_missing_from_the_index(tmp_path, server_factory, cache):
    server = server_factory(Index(tmp_path / "empty"))
    with pytest.raises(SourceError, match=r"vllm is not on the package index http://127\.0\.0\.1"):
        fetch_release("vllm", "latest", cache_dir=cache, index_url=server.url, progress=False)


def test_missing_artifact_is_an_http_error(index, server_factory, cache):
    server = server_factory(index)
    (index.root / "files" / "vllm-0.9.0.tar.gz").unlink()
    with pytest.raises(SourceError, match=r"could not fetch http://\S+/files/vllm-0\.9\.0\.tar\.gz: HTTP 404"):
        fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url=server.url, progress=False)
    assert list((cache / "releases" / "vllm").iterdir()) == []


def test_progress_line_on_a_non_terminal(index, cache, capsys):
    fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url=index.file_url, progress=True)
    err = capsys.readouterr().err
    assert re.search(r"fetching vllm 0\.9\.0 \(\d+ B sdist\) from file://\S+/files/vllm-0\.9\.0\.tar\.gz\n", err)
    fetch_release("vllm", "==0.10.0", cache_dir=cache, index_url=index.file_url, progress=False)
    assert capsys.readouterr().err == ""


# -- the real index ---------------------------------------------------------------------------


@pytest.mark.network
def test_real_vllm_0_11_0_sdist(tmp_path, monkeypatch):
    monkeypatch.delenv("PIP_CONFIG_FILE")  # this machine's real index configuration
    tree = fetch_release("vllm", "==0.11.0", cache_dir=tmp_path, progress=False)
    assert tree.version == "0.11.0"
    assert tree.exists("vllm/config/speculative.py")
    assert tree.source.detail["artifact"] == "vllm-0.11.0.tar.gz" and tree.source.detail["verified"] == "sha256"
    assert not list(tree.root.rglob("*.cu")) and not list(tree.root.rglob("*.so"))
    assert len(tree.files()) > 500


@pytest.mark.network
def test_real_vllm_0_15_0_wheel_only_through_ranges(tmp_path, monkeypatch):
    monkeypatch.delenv("PIP_CONFIG_FILE")
    tree = fetch_release("vllm", "==0.15.0", cache_dir=tmp_path, progress=False)
    detail = tree.source.detail
    assert detail["artifact"].endswith(".whl")
    record = json.loads((tree.root / "release.json").read_text())
    assert detail["downloaded_bytes"] < record["size"] / 20  # a few MB of a ~460 MB wheel
    assert tree.exists("vllm/config/speculative.py") and len(tree.files()) > 500
    assert not list(tree.root.rglob("*.so"))
