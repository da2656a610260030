"""Which index, and what it lists: pip's configuration, the PEP 691/503 project page, the cached listing.

pip's `index/collector.py` in miniature:
- the index pip would use: `PIP_INDEX_URL`, `PIP_EXTRA_INDEX_URL`, pip's config files read with configparser
  (pip itself is never run: it takes seconds to start); `file://` indexes (local mirrors) work too,
  missing ones are skipped;
- the project page: JSON (PEP 691) asked for first, HTML (PEP 503) as the fallback (read by pages.py),
  every index's files merged, the primary index first;
- the listing is cached (`<cache>/index/<engine>.json`) so that `latest` and ranges resolve offline, and
  reused for `LISTING_TTL` seconds online: then neither network.py nor pages.py is imported.
Which version and which artifact to take from a listing is `choice.py`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from compat.errors import SourceError
from compat.sources.auth import remember_credentials, use_ca_bundle
from compat.sources.cache import atomic_write, cached_versions, listing_path
from compat.sources.choice import Artifact

__all__ = ["DEFAULT_INDEX", "LISTING_TTL", "Listing", "index_urls", "listing", "pip_config"]

DEFAULT_INDEX = "https://pypi.org/simple/"
LISTING_TTL = 600  # seconds an index listing is reused without asking the index again
_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
_JSON_TYPE = "application/vnd.pypi.simple.v1+json"


# -- which index: pip's configuration, read the way pip reads it ------------------------------


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


def pip_config() -> dict[str, str]:
    """`index-url`, `extra-index-url` and `cert` as pip would see them for `pip download`/`install`."""
    from configparser import ConfigParser
    from configparser import Error as ConfigError

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
    config = pip_config()
    cert = os.environ.get("PIP_CERT") or config.get("cert")
    use_ca_bundle(cert if cert and os.path.isfile(cert) else None)
    primary = index_url or os.environ.get("PIP_INDEX_URL") or config.get("index-url") or DEFAULT_INDEX
    extras = (os.environ.get("PIP_EXTRA_INDEX_URL") or config.get("extra-index-url") or "").split()
    urls: list[str] = []
    for url in [primary.strip(), *extras]:
        clean = remember_credentials(url)
        if clean not in urls:
            urls.append(clean)
    return urls


# -- the project page ---------------------------------------------------------------------------


def _project_files(index: str, engine: str) -> list[Artifact] | None:
    """What `index` lists for `engine`; None when the index does not have the project (or does not exist locally)."""
    import http.client

    from compat.sources.network import FetchError, describe, local_path, open_url
    from compat.sources.pages import parse_html, parse_json, project_name

    page_url = index.rstrip("/") + "/" + project_name(engine) + "/"
    if page_url.startswith("file:"):
        page = local_path(page_url) / "index.html"
        if not page.is_file():
            return None
        return parse_html(page.read_text(encoding="utf-8", errors="replace"), page_url, engine, index)
    try:
        with open_url(page_url, {"Accept": _ACCEPT}) as response:
            body = response.read()
            content_type = response.headers.get_content_type()
            page_url = response.geturl()
    except FetchError as err:
        if err.status in (404, 410):
            return None
        raise
    except (OSError, http.client.HTTPException) as err:
        raise FetchError(page_url, describe(err)) from None
    if content_type == _JSON_TYPE or (content_type.endswith("json") and body.lstrip()[:1] == b"{"):
        try:
            return parse_json(json.loads(body), page_url, engine, index)
        except (ValueError, AttributeError) as err:
            raise FetchError(page_url, f"the index sent invalid JSON ({err})") from None
    return parse_html(body.decode("utf-8", errors="replace"), page_url, engine, index)


def _fetch_listing(engine: str, indexes: list[str]) -> list[Artifact]:
    """Every index's files for the engine, the primary index first (pip merges them the same way)."""
    from compat.sources.network import FetchError

    files: list[Artifact] = []
    seen: set[str] = set()
    listed_anywhere = False
    for position, index in enumerate(indexes):
        try:
            found = _project_files(index, engine)
        except FetchError:
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


# -- the cached listing -----------------------------------------------------------------------


@dataclass(frozen=True)
class Listing:
    """What the indexes list for one engine, and whether it came from the cached listing."""

    files: list[Artifact]
    indexes: list[str]  # [primary, *extras] as configured
    from_cache: bool

    @property
    def where(self) -> str:
        """The indexes that listed files, in configured order (the primary one when none did): for messages."""
        found = sorted({f.index for f in self.files}, key=lambda i: self.indexes.index(i) if i in self.indexes else 99)
        return ", ".join(found) or self.indexes[0]


def _read_listing(cache: Path, engine: str) -> dict | None:
    try:
        data = json.loads(listing_path(cache, engine).read_text())
        data["files"] = [Artifact(**row) for row in data["files"]]
        return data
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_listing(cache: Path, engine: str, indexes: list[str], files: list[Artifact]) -> None:
    data = {"engine": engine, "indexes": indexes, "fetched_at": time.time(), "files": [asdict(f) for f in files]}
    with contextlib.suppress(OSError):  # a read-only cache still resolves online; writing the release reports it
        atomic_write(listing_path(cache, engine), json.dumps(data, indent=1))


def listing(engine: str, indexes: list[str], cache: Path, offline: bool, *, fresh: bool = False) -> Listing:
    """Offline: the last listing whatever its age; online: reused for LISTING_TTL seconds (`fresh`: asked again)."""
    cached = _read_listing(cache, engine)
    if offline:
        if cached is None:
            raise SourceError(
                f"offline and no index listing of {engine} in the cache {listing_path(cache, engine)}",
                hint=f"pin a cached release (e.g. --engine {engine}==X.Y.Z; cached: {', '.join(cached_versions(cache, engine)) or 'none'}) "
                "or run once online",
            )
        return Listing(cached["files"], indexes, True)
    if not fresh and cached and cached.get("indexes") == indexes and 0 <= time.time() - cached.get("fetched_at", 0) < LISTING_TTL:
        return Listing(cached["files"], indexes, True)
    files = _fetch_listing(engine, indexes)
    _write_listing(cache, engine, indexes, files)
    return Listing(files, indexes, False)
