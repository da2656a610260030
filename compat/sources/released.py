"""Released engines: a vLLM/SGLang release's Python source, fetched from the package index into the user cache.

`--engine vllm==0.11.0` / `--engine 'sglang>=0.5.8,<0.6'` / `--engine vllm==latest` end here.

- Index: the one pip would use (`PIP_INDEX_URL`, `PIP_EXTRA_INDEX_URL`, pip's config files read with
  configparser; pip itself is never run: it takes seconds to start). Simple API, JSON (PEP 691) with an
  HTML fallback (PEP 503); `file://` indexes (local mirrors) work too, missing ones are skipped.
- Version: `latest` is the highest final release; a specifier picks the highest match. Pre/dev releases
  only when the specifier names one, yanked files only when pinned with `==` (pip's rules).
- Artifact: the smallest that holds the source: the sdist, else the smallest wheel. Wheels are
  hundreds of MB of compiled code around a few MB of Python, so when the server honours HTTP Range
  requests only the zip's central directory and the `.py` members are read.
- Cache: `<cache>/releases/<engine>/<version>/<engine>/**.py` plus `release.json`; built in a temp dir
  next to it and renamed into place under a per-release `flock`, so a half-written tree is never
  visible and two processes fetching the same release download it once. A cached `==X` needs no
  network at all; the index listing is cached too, so `latest` and ranges resolve offline.
"""

from __future__ import annotations

import base64
import bisect
import contextlib
import fcntl
import functools
import hashlib
import http.client
import io
import json
import os
import re
import shutil
import socket
import ssl
import stat
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from configparser import ConfigParser
from configparser import Error as ConfigError
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from compat import __version__
from compat.errors import SourceError, UsageError
from compat.tree import ENGINES, EngineTree, SourceInfo

__all__ = ["fetch_release", "list_releases", "cache_root", "index_urls"]

DEFAULT_INDEX = "https://pypi.org/simple/"
TIMEOUT = 30  # seconds per socket operation (connect, each read)
LISTING_TTL = 600  # seconds an index listing is reused without asking the index again
_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
_JSON_TYPE = "application/vnd.pypi.simple.v1+json"
_TAIL_BYTES = 512 * 1024  # first ranged read of a wheel: the end record and, for vLLM/SGLang wheels, the whole directory
_PARALLEL_RANGES = 4  # member spans are fetched concurrently: each request is mostly a round trip
_MIN_RANGE = 64 * 1024  # a read that misses fetches at least this much
_COALESCE_GAP = 1024 * 1024  # members closer than this are fetched in one request (a round trip costs more)
_CHUNK = 1024 * 1024


# -- cache -----------------------------------------------------------------------------------


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """`cache_dir`, else `$XDG_CACHE_HOME/compat`, else `~/.cache/compat` (not created here)."""
    if cache_dir:
        return Path(cache_dir).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "compat"
    return Path.home() / ".cache" / "compat"


# -- which index: pip's configuration, read the way pip reads it ------------------------------

# Credentials found in index URLs, by host; added to requests for that host, never stored or shown.
_CREDENTIALS: dict[str, str] = {}
# The CA bundle pip is told to use (`cert`, PIP_CERT), set by index_urls(); one TLS context per bundle.
_CAFILE: list[str | None] = [None]


def _pip_config_files() -> list[Path]:
    """pip's files, lowest priority first: global, user (skipped when PIP_CONFIG_FILE exists), site, PIP_CONFIG_FILE."""
    env_file = os.environ.get("PIP_CONFIG_FILE")
    if env_file == os.devnull:  # pip's documented way to ignore every config file
        return []
    xdg_dirs = os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    files = [Path(d) / "pip" / "pip.conf" for d in xdg_dirs.split(os.pathsep) if d]
    files.append(Path("/etc/pip.conf"))
    if not (env_file and os.path.exists(env_file)):
        config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        files += [Path.home() / ".pip" / "pip.conf", Path(config_home) / "pip" / "pip.conf"]
    files.append(Path(os.environ.get("VIRTUAL_ENV") or sys.prefix) / "pip.conf")
    if env_file:
        files.append(Path(env_file))
    return files


def _pip_config() -> dict[str, str]:
    """`index-url`, `extra-index-url` and `cert` as pip would see them for `pip download`/`install`."""
    values: dict[str, str] = {}
    for path in _pip_config_files():
        if not path.is_file():
            continue
        parser = ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (ConfigError, UnicodeDecodeError, OSError) as err:
            raise SourceError(f"{path}: cannot read this pip config file ({err})", hint="fix or remove it (pip would refuse it too)") from None
        for section in ("global", "install", "download"):  # a command's section overrides [global]
            if parser.has_section(section):
                for key, value in parser.items(section):
                    values[key.replace("_", "-")] = value
    return values


def index_urls(index_url: str | None = None) -> list[str]:
    """[primary, *extras]: `index_url` (else PIP_INDEX_URL / pip config / PyPI), then the extra indexes."""
    config = _pip_config()
    cert = os.environ.get("PIP_CERT") or config.get("cert")
    _CAFILE[0] = cert if cert and os.path.isfile(cert) else None
    primary = index_url or os.environ.get("PIP_INDEX_URL") or config.get("index-url") or DEFAULT_INDEX
    extras = (os.environ.get("PIP_EXTRA_INDEX_URL") or config.get("extra-index-url") or "").split()
    urls: list[str] = []
    for url in [primary.strip(), *extras]:
        clean = _remember_credentials(url)
        if clean not in urls:
            urls.append(clean)
    return urls


@functools.lru_cache(maxsize=4)
def _tls_context(cafile: str | None) -> ssl.SSLContext:
    """Built once: loading a CA bundle costs milliseconds, and a wheel takes several requests."""
    return ssl.create_default_context(cafile=cafile)


def _remember_credentials(url: str) -> str:
    """The URL without `user:password@`; the credentials are kept for requests to that host."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
    _CREDENTIALS[host] = f"Basic {token}"
    return urlunsplit(parts._replace(netloc=host))


# -- HTTP -------------------------------------------------------------------------------------


class _FetchError(SourceError):
    def __init__(self, url: str, reason: str, status: int | None = None):
        super().__init__(
            f"could not fetch {url}: {reason}",
            hint="check the network and the index (PIP_INDEX_URL, pip.conf); offline, use a cached release with --offline",
        )
        self.status = status


class _NoRanges(Exception):
    """The server answered a Range request with the whole file."""


def _why(err: BaseException) -> str:
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


def _open_url(url: str, headers: dict[str, str] | None = None):
    """urlopen with a timeout, the host's credentials and errors as SourceError naming the URL."""
    request = urllib.request.Request(url, headers={"User-Agent": f"compat/{__version__}", **(headers or {})})
    auth = _CREDENTIALS.get(urlsplit(url).netloc)
    if auth:
        request.add_unredirected_header("Authorization", auth)
    context = _tls_context(_CAFILE[0]) if url.startswith("https:") else None
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT, context=context)
    except urllib.error.HTTPError as err:
        err.close()
        raise _FetchError(url, f"HTTP {err.code} {err.reason}", status=err.code) from None
    except (urllib.error.URLError, OSError) as err:
        raise _FetchError(url, _why(err)) from None


def _local_path(url: str) -> Path:
    return Path(urllib.request.url2pathname(urlsplit(url).path))


def _human(size: int | None) -> str:
    if size is None:
        return "size unknown"
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return ""


# -- the index listing ------------------------------------------------------------------------


@dataclass(frozen=True)
class Artifact:
    """One file an index lists for the engine."""

    filename: str
    url: str
    version: str
    kind: str  # "sdist" | "wheel"
    sha256: str | None
    size: int | None
    yanked: bool
    index: str


def _artifact(engine: str, filename: str, url: str, sha256, size, yanked, index: str) -> Artifact | None:
    try:
        if filename.endswith(".whl"):
            name, version, _, _ = parse_wheel_filename(filename)
            kind = "wheel"
        elif filename.endswith(".tar.gz"):
            name, version = parse_sdist_filename(filename)
            kind = "sdist"
        else:  # .zip sdists, eggs, .exe installers: none of the engines' releases
            return None
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    if name != canonicalize_name(engine):
        return None
    size = size if isinstance(size, int) and size >= 0 else None
    return Artifact(filename, url, str(version), kind, sha256 or None, size, bool(yanked), index)


class _Anchors(HTMLParser):
    """<a href> of a PEP 503 page, with data-yanked, and <base href>."""

    def __init__(self):
        super().__init__()
        self.base: str | None = None
        self.links: list[tuple[str, bool]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "base" and attrs.get("href") and self.base is None:
            self.base = attrs["href"]
        elif tag == "a" and attrs.get("href"):
            self.links.append((attrs["href"], "data-yanked" in attrs))


def _parse_html(text: str, page_url: str, engine: str, index: str) -> list[Artifact]:
    parser = _Anchors()
    parser.feed(text)
    base = urljoin(page_url, parser.base) if parser.base else page_url
    out = []
    for href, yanked in parser.links:
        url = urljoin(base, href)
        parts = urlsplit(url)
        fragment = dict(p.split("=", 1) for p in parts.fragment.split("&") if "=" in p)
        filename = urllib.request.url2pathname(parts.path.rsplit("/", 1)[-1])
        url = urlunsplit(parts._replace(fragment=""))
        found = _artifact(engine, filename, url, fragment.get("sha256"), None, yanked, index)
        if found:
            out.append(found)
    return out


def _parse_json(data: dict, page_url: str, engine: str, index: str) -> list[Artifact]:
    out = []
    for row in data.get("files", []):
        found = _artifact(
            engine, row.get("filename", ""), urljoin(page_url, row.get("url", "")),
            (row.get("hashes") or {}).get("sha256"), row.get("size"), row.get("yanked"), index,
        )
        if found:
            out.append(found)
    return out


def _project_files(index: str, engine: str) -> list[Artifact] | None:
    """What `index` lists for `engine`; None when the index does not have the project (or does not exist locally)."""
    page_url = index.rstrip("/") + "/" + canonicalize_name(engine) + "/"
    if page_url.startswith("file:"):
        page = _local_path(page_url) / "index.html"
        if not page.is_file():
            return None
        return _parse_html(page.read_text(encoding="utf-8", errors="replace"), page_url, engine, index)
    try:
        with _open_url(page_url, {"Accept": _ACCEPT}) as response:
            body = response.read()
            content_type = response.headers.get_content_type()
            page_url = response.geturl()
    except _FetchError as err:
        if err.status in (404, 410):
            return None
        raise
    except (OSError, http.client.HTTPException) as err:
        raise _FetchError(page_url, _why(err)) from None
    if content_type == _JSON_TYPE or (content_type.endswith("json") and body.lstrip()[:1] == b"{"):
        try:
            return _parse_json(json.loads(body), page_url, engine, index)
        except (ValueError, AttributeError) as err:
            raise _FetchError(page_url, f"the index sent invalid JSON ({err})") from None
    return _parse_html(body.decode("utf-8", errors="replace"), page_url, engine, index)


def _listing_path(cache: Path, engine: str) -> Path:
    return cache / "index" / f"{engine}.json"


def _read_listing(cache: Path, engine: str) -> dict | None:
    try:
        data = json.loads(_listing_path(cache, engine).read_text())
        data["files"] = [Artifact(**row) for row in data["files"]]
        return data
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_listing(cache: Path, engine: str, indexes: list[str], files: list[Artifact]) -> None:
    path = _listing_path(cache, engine)
    data = {"engine": engine, "indexes": indexes, "fetched_at": time.time(), "files": [asdict(f) for f in files]}
    with contextlib.suppress(OSError):  # a read-only cache still resolves online; writing the release reports it
        _atomic_write(path, json.dumps(data, indent=1))


def _fetch_listing(engine: str, indexes: list[str]) -> list[Artifact]:
    """Every index's files for the engine, the primary index first (pip merges them the same way)."""
    files: list[Artifact] = []
    seen: set[str] = set()
    listed_anywhere = False
    for position, index in enumerate(indexes):
        try:
            found = _project_files(index, engine)
        except _FetchError:
            if position == 0:  # the main index must answer; an unreachable extra one is skipped, as pip does
                raise
            continue
        if found is None:
            continue
        listed_anywhere = True
        for artifact in found:
            if artifact.filename not in seen:
                seen.add(artifact.filename)
                files.append(artifact)
    if not listed_anywhere:
        raise SourceError(
            f"{engine} is not on the package index {', '.join(indexes)}",
            hint="check PIP_INDEX_URL / index-url in pip.conf (the default is https://pypi.org/simple/)",
        )
    return files


def _listing(engine: str, indexes: list[str], cache: Path, offline: bool, *, fresh: bool = False) -> tuple[list[Artifact], bool]:
    """(files, from_cache). Offline: the last listing whatever its age; online: reused for LISTING_TTL seconds."""
    cached = _read_listing(cache, engine)
    if offline:
        if cached is None:
            raise SourceError(
                f"offline and no index listing of {engine} in the cache {_listing_path(cache, engine)}",
                hint=f"pin a cached release (e.g. --engine {engine}==X.Y.Z; cached: {', '.join(_cached_versions(cache, engine)) or 'none'}) "
                "or run once online",
            )
        return cached["files"], True
    if not fresh and cached and cached.get("indexes") == indexes and 0 <= time.time() - cached.get("fetched_at", 0) < LISTING_TTL:
        return cached["files"], True
    files = _fetch_listing(engine, indexes)
    _write_listing(cache, engine, indexes, files)
    return files, False


# -- which version, which artifact ------------------------------------------------------------


def _parse_specifier(specifier: str) -> SpecifierSet | None:
    """None for "latest"; UsageError for text that is not a specifier."""
    text = (specifier or "").strip()
    if text.lstrip("=").strip().lower() in ("latest", ""):
        return None
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise UsageError(f"{specifier!r} is not a version specifier", hint="e.g. ==0.11.0, '>=0.18,<0.20' or latest") from None


def _is_exact_pin(spec: SpecifierSet | None) -> bool:
    return bool(spec) and all(s.operator in ("==", "===") and not s.version.endswith(".*") for s in spec)


def _final(version: Version) -> bool:
    return not (version.is_prerelease or version.is_devrelease)


def _releases(files: list[Artifact]) -> list[Version]:
    """Final versions with at least one file that is not yanked, ascending."""
    return sorted({Version(f.version) for f in files if not f.yanked and _final(Version(f.version))})


def _choose(engine: str, spec: SpecifierSet | None, files: list[Artifact], where: str) -> tuple[str, list[Artifact]]:
    """(version, its artifacts best first) for `spec`; SourceError naming the closest versions when none matches."""
    exact = _is_exact_pin(spec)
    allow_pre = bool(spec is not None and spec.prereleases)
    by_version: dict[Version, list[Artifact]] = {}
    for artifact in files:
        by_version.setdefault(Version(artifact.version), []).append(artifact)
    matching, excluded = [], []
    for version, artifacts in by_version.items():
        if spec is not None and not spec.contains(version, prereleases=True):
            continue
        if not exact and all(a.yanked for a in artifacts):
            excluded.append(f"{version} is yanked (pin it with =={version} to use it anyway)")
        elif not _final(version) and not allow_pre:
            if spec is not None:  # "latest" skips pre-releases silently
                excluded.append(f"{version} is a pre-release (name it, e.g. =={version})")
        else:
            matching.append(version)
    if not matching:
        finals = _releases(files)
        newest = f"newest: {finals[-1]}" if finals else "no final release listed"
        wanted = "latest" if spec is None else str(spec)
        hint = "; ".join(excluded[:3]) or f"closest available: {', '.join(map(str, _closest(finals, spec)))}"
        raise SourceError(f"no release of {engine} matches {wanted} on {where} ({newest})", hint=hint)
    version = max(matching)
    order = {"sdist": 0, "wheel": 1}
    usable = [a for a in by_version[version] if exact or not a.yanked]
    artifacts = sorted(usable, key=lambda a: (a.yanked, order[a.kind], a.size if a.size is not None else 1 << 62, a.filename))
    return str(version), artifacts


def _closest(versions: list[Version], spec: SpecifierSet | None, around: int = 2) -> list[Version]:
    """The versions on either side of the first version the specifier names (else the newest few)."""
    named = []
    for item in spec or ():
        with contextlib.suppress(InvalidVersion):
            named.append(Version(item.version.removesuffix(".*")))
    if not versions or not named:
        return versions[-2 * around:]
    target = min(named)
    below = [v for v in versions if v < target][-around:]
    above = [v for v in versions if v >= target][:around]
    return below + above


# -- archives: only the package's .py files, never outside the destination --------------------


def _safe_parts(name: str) -> list[str] | None:
    """The path components of an archive member name; None for absolute, `..`, drive or odd names."""
    if not name or "\\" in name or "\x00" in name or name.startswith("/"):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or re.match(r"^[A-Za-z]:", parts[0]):
        return None
    return parts


def _package_prefix(candidates: list[list[str]], engine: str) -> list[str] | None:
    """The shallowest folder holding `<engine>/__init__.py` (`vllm-X/`, `sglang-X/python/`, or the wheel's root)."""
    inits = [parts[:-2] for parts in candidates if len(parts) >= 2 and parts[-2] == engine and parts[-1] == "__init__.py"]
    return min(inits, key=len) if inits else None


def _write_member(source, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as out:
        shutil.copyfileobj(source, out, _CHUNK)


def _extract_sdist(stream, staging: Path, engine: str) -> Path | None:
    """Stream a .tar.gz, keeping the .py files that sit under some `<engine>/` folder; the package folder or None."""
    kept: list[list[str]] = []
    with tarfile.open(fileobj=stream, mode="r|*") as tar:
        for member in tar:
            if not member.isreg():  # symlinks, hard links, devices: never created
                continue
            parts = _safe_parts(member.name)
            if parts is None or not parts[-1].endswith(".py") or engine not in parts[:-1]:
                continue
            try:
                _write_member(tar.extractfile(member), staging.joinpath(*parts))
            except (FileExistsError, NotADirectoryError, IsADirectoryError):  # collides with an earlier member: skip it
                continue
            kept.append(parts)
    prefix = _package_prefix(kept, engine)
    return None if prefix is None else staging.joinpath(*prefix, engine)


def _extract_wheel(archive: zipfile.ZipFile, dest: Path, engine: str, prefetch=None) -> int | None:
    """Write the package's .py members under `dest/<engine>/`; the number written, or None without a package."""
    members: list[tuple[zipfile.ZipInfo, list[str]]] = []
    for info in archive.infolist():
        parts = _safe_parts(info.filename)
        if parts is None or info.is_dir() or stat.S_ISLNK(info.external_attr >> 16):
            continue
        members.append((info, parts))
    prefix = _package_prefix([parts for _, parts in members], engine)
    if prefix is None:
        return None
    depth = len(prefix) + 1
    wanted = [(info, parts) for info, parts in members if parts[:depth] == [*prefix, engine] and parts[-1].endswith(".py")]
    if prefetch:
        prefetch(archive, [info for info, _ in wanted])
    for info, parts in wanted:
        with archive.open(info) as source:  # checks each member's CRC-32
            _write_member(source, dest.joinpath(engine, *parts[depth:]))
    return len(wanted)


# -- downloads --------------------------------------------------------------------------------


class _Meter(io.RawIOBase):
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
            raise _FetchError(getattr(self._raw, "url", None) or "the artifact", f"download interrupted: {_why(err)}") from None
        if n:
            self.sha256.update(memoryview(buffer)[:n])
            self.count += n
            self._advance(n)
        return n

    def drain(self):
        while self.read(_CHUNK):
            pass


class _RangedFile(io.RawIOBase):
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
            if size is None or size > _TAIL_BYTES:
                self._fetch(None if size is None else size - _TAIL_BYTES, None if size is None else size)
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
            self._fetch(gap_start, min(self.size, max(gap_end, gap_start + _MIN_RANGE)))

    def _fetch(self, start: int | None, end: int | None) -> None:
        """Bytes [start, end) (start None: the last _TAIL_BYTES) into the spool; _NoRanges if the server ignores Range."""
        wanted = f"bytes=-{_TAIL_BYTES}" if start is None else f"bytes={start}-{end - 1}"
        with self._lock:
            self.requests += 1
        try:
            response = _open_url(self.url, {"Range": wanted, "Accept-Encoding": "identity"})
        except _FetchError as err:
            if err.status == 416:  # Range Not Satisfiable: the index's size is wrong; read it whole
                raise _NoRanges() from None
            raise
        with response:
            if response.status != 206:
                raise _NoRanges()
            match = re.match(r"bytes (\d+)-(\d+)/(\d+|\*)", response.headers.get("Content-Range", ""))
            if not match or (start is not None and int(match.group(1)) != start):
                raise _NoRanges()
            first, last, total = int(match.group(1)), int(match.group(2)), match.group(3)
            if total == "*" or (self.size is not None and int(total) != self.size):
                raise _NoRanges()  # not the file the index described: a full download checks its sha256
            self.size = int(total)
            offset = first
            try:
                while chunk := response.read(_CHUNK):
                    os.pwrite(self._fd, chunk, offset)
                    offset += len(chunk)
                    with self._lock:
                        self.downloaded += len(chunk)
                        self._advance(len(chunk))
            except (OSError, http.client.HTTPException) as err:
                raise _FetchError(self.url, f"download interrupted: {_why(err)}") from None
            if offset != last + 1:
                raise _FetchError(self.url, f"short ranged read ({offset - first} of {last + 1 - first} bytes)")
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
            if spans and start - spans[-1][1] <= _COALESCE_GAP:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end])
        gaps = [gap for start, end in spans for gap in self.missing(start, end)]
        pool = ThreadPoolExecutor(_PARALLEL_RANGES)
        try:
            for done in [pool.submit(self._fetch, start, end) for start, end in gaps]:
                done.result()
        finally:
            pool.shutdown(cancel_futures=True)  # after a failure, the queued ranges are not worth fetching


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


def _open_artifact(url: str):
    if url.startswith("file:"):
        try:
            return open(_local_path(url), "rb")
        except OSError as err:
            raise _FetchError(url, err.strerror or str(err)) from None
    return _open_url(url, {"Accept-Encoding": "identity"})


def _content_length(response) -> int | None:
    value = getattr(response, "headers", {}).get("Content-Length", "")
    return int(value) if value.isdigit() else None


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
    with contextlib.closing(_open_artifact(artifact.url)) as raw:
        progress.set_total(_content_length(raw))
        meter = _Meter(raw, progress.advance)
        try:
            package = _extract_sdist(meter, staging, engine)
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
            path = _local_path(artifact.url)
            with _open_artifact(artifact.url) as raw:
                meter = _Meter(raw, progress.advance)
                meter.drain()
            verified = _check_sha256(artifact, meter.sha256.hexdigest())
            with zipfile.ZipFile(path) as archive:
                written = _extract_wheel(archive, work, engine)
            return None if written is None else {"verified": verified, "downloaded_bytes": meter.count, "ranged": False}
        try:
            with _RangedFile(artifact.url, artifact.size, spool, progress.advance) as remote:
                with zipfile.ZipFile(remote) as archive:
                    written = _extract_wheel(archive, work, engine, prefetch=remote.prefetch)
                detail = {
                    "verified": "crc32 of each member only: a ranged read cannot check the wheel's sha256",
                    "downloaded_bytes": remote.downloaded, "ranged": True, "range_requests": remote.requests,
                }
            return None if written is None else detail
        except _NoRanges:
            shutil.rmtree(work / engine, ignore_errors=True)  # members read before the server stopped honouring Range
        # The server ignores Range: download the whole wheel, then read it locally.
        with contextlib.closing(_open_artifact(artifact.url)) as raw, open(spool, "wb") as out:
            progress.set_total(_content_length(raw))
            meter = _Meter(raw, progress.advance)
            shutil.copyfileobj(meter, out, _CHUNK)
        verified = _check_sha256(artifact, meter.sha256.hexdigest())
        with zipfile.ZipFile(spool) as archive:
            written = _extract_wheel(archive, work, engine)
        return None if written is None else {"verified": verified, "downloaded_bytes": meter.count, "ranged": False}
    except zipfile.BadZipFile as err:
        raise SourceError(f"{artifact.filename} from {artifact.url}: not a readable wheel ({err})") from None
    finally:
        spool.unlink(missing_ok=True)


# -- the cache: atomic, locked ----------------------------------------------------------------


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _release_dir(cache: Path, engine: str, version: str) -> Path:
    return cache / "releases" / engine / version


def _record(directory: Path) -> dict | None:
    """release.json of a cached release; None when missing or unreadable (an incomplete tree)."""
    try:
        record = json.loads((directory / "release.json").read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _is_complete(directory: Path, engine: str) -> bool:
    return (directory / engine / "__init__.py").is_file() and _record(directory) is not None


def _cached_versions(cache: Path, engine: str) -> list[str]:
    folder = cache / "releases" / engine
    found = []
    for entry in folder.iterdir() if folder.is_dir() else ():
        if entry.name.startswith("."):
            continue
        try:
            version = Version(entry.name)
        except InvalidVersion:
            continue
        if _is_complete(entry, engine):
            found.append(version)
    return [str(v) for v in sorted(found)]


def _cached_pin(cache: Path, engine: str, spec: SpecifierSet) -> Path | None:
    for version in reversed(_cached_versions(cache, engine)):
        if spec.contains(version, prereleases=True):
            return _release_dir(cache, engine, version)
    return None


@contextlib.contextmanager
def _locked(cache: Path, engine: str, version: str, progress: bool):
    """An exclusive flock per release; the second process waits here, then finds the release cached."""
    path = cache / "locks" / f"{engine}-{version}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if progress:
                print(f"waiting for another process fetching {engine} {version} into {cache}", file=sys.stderr, flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tree(directory: Path, engine: str, cached: bool, downloaded: int = 0) -> EngineTree:
    record = _record(directory) or {}
    detail = {
        "artifact": record.get("artifact"), "index": record.get("index"), "cached": cached,
        "url": record.get("url"), "sha256": record.get("sha256"), "verified": record.get("verified"),
        "fetched_at": record.get("fetched_at"), "downloaded_bytes": downloaded,
    }
    if record.get("ranged"):
        detail["range_requests"] = record.get("range_requests")
    return EngineTree(engine, directory, record.get("version") or directory.name, SourceInfo("released", str(directory), detail))


def _download(cache: Path, engine: str, version: str, artifacts: list[Artifact], progress: bool) -> EngineTree:
    final = _release_dir(cache, engine, version)
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
                    size = _local_path(artifact.url).stat().st_size
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
        (work / "release.json").write_text(json.dumps(record, indent=1) + "\n")
        if final.exists():  # an incomplete tree from an older run (we hold the lock): move it aside first
            trash = Path(tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=final.parent))
            os.rename(final, trash / "old")
            shutil.rmtree(trash, ignore_errors=True)
        os.rename(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return _tree(final, engine, cached=False, downloaded=detail["downloaded_bytes"])


# -- public API -------------------------------------------------------------------------------


def list_releases(engine: str, *, index_url: str | None = None, cache_dir: str | Path | None = None, offline: bool = False) -> list[str]:
    """Final, not-yanked versions of `engine` on the index, ascending (offline: from the cached listing)."""
    _check_engine(engine)
    files, _ = _listing(engine, index_urls(index_url), cache_root(cache_dir), offline)
    return [str(v) for v in _releases(files)]


def fetch_release(
    engine: str,
    specifier: str,
    *,
    cache_dir: str | Path | None = None,
    offline: bool = False,
    progress: bool = True,
    index_url: str | None = None,
) -> EngineTree:
    """The source tree of the release of `engine` that `specifier` ("latest", "==0.11.0", ">=0.18,<0.20") picks."""
    _check_engine(engine)
    spec = _parse_specifier(specifier)
    cache = cache_root(cache_dir)
    if _is_exact_pin(spec):  # a cached pin needs no index at all
        hit = _cached_pin(cache, engine, spec)
        if hit is not None:
            return _tree(hit, engine, cached=True)
        if offline:
            raise SourceError(
                f"offline and {engine}{spec} is not in the cache {cache / 'releases' / engine}",
                hint=f"run once without --offline to fetch it (cached: {', '.join(_cached_versions(cache, engine)) or 'none'})",
            )
    indexes = index_urls(index_url)
    files, from_cache = _listing(engine, indexes, cache, offline)
    where = ", ".join(sorted({f.index for f in files}, key=lambda i: indexes.index(i) if i in indexes else 99)) or indexes[0]
    try:
        version, artifacts = _choose(engine, spec, files, where)
    except SourceError:
        if offline or not from_cache:
            raise
        files, _ = _listing(engine, indexes, cache, offline, fresh=True)  # a release newer than the cached listing?
        version, artifacts = _choose(engine, spec, files, where)
    final = _release_dir(cache, engine, version)
    if _is_complete(final, engine):
        return _tree(final, engine, cached=True)
    if offline:
        raise SourceError(
            f"offline and {engine}=={version} is not in the cache {cache / 'releases' / engine}",
            hint=f"run once without --offline to fetch it (cached: {', '.join(_cached_versions(cache, engine)) or 'none'})",
        )
    try:
        with _locked(cache, engine, version, progress):
            if _is_complete(final, engine):  # another process fetched it while we waited
                return _tree(final, engine, cached=True)
            return _download(cache, engine, version, artifacts, progress)
    except OSError as err:  # the cache, not the network (network errors are SourceErrors already)
        raise SourceError(
            f"cannot write {engine} {version} into the cache {cache}: {err.strerror or err}",
            hint="free some space or pick another folder with --cache-dir (or XDG_CACHE_HOME)",
        ) from None


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}: expected one of {', '.join(ENGINES)}")
