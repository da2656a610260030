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
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from compat.core.errors import SourceError
from compat.sources.auth import remember_credentials
from compat.sources.cache import atomic_write, cached_versions, listing_path
from compat.sources.choice import Artifact
from compat.sources.settings import DEFAULT_INDEX, NetworkOptions, pip_config

if TYPE_CHECKING:
    from compat.sources.network import Session

__all__ = ["DEFAULT_INDEX", "LISTING_TTL", "Listing", "index_urls", "recent_listing", "fetch_listing", "forget_listing",
           "pip_config"]

LISTING_TTL = 600  # seconds an index listing is reused without asking the index again
_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
_JSON_TYPE = "application/vnd.pypi.simple.v1+json"


# -- which index: pip's configuration (settings.py reads it) ----------------------------------


def index_urls(index_url: str | None = None, options: NetworkOptions | None = None) -> list[str]:
    """[primary, *extras]: `index_url` (else --index-url, PIP_INDEX_URL, pip config, PyPI), then the extra indexes.

    Credentials in them are kept by auth.py for their host and taken out of the URLs."""
    options = options or NetworkOptions.resolve(index_url=index_url)
    urls: list[str] = []
    for url in [options.index_url, *options.extra_index_urls]:
        clean = remember_credentials(url)
        if clean not in urls:
            urls.append(clean)
    return urls


# -- the project page ---------------------------------------------------------------------------


def _project_files(index: str, engine: str, session: Session) -> list[Artifact] | None:
    """What `index` lists for `engine`; None when the index does not have the project (or does not exist locally)."""
    from compat.sources.network import FetchError, local_path
    from compat.sources.pages import parse_html, parse_json, project_name

    page_url = index.rstrip("/") + "/" + project_name(engine) + "/"
    if page_url.startswith("file:"):
        page = local_path(page_url) / "index.html"
        if not page.is_file():
            return None
        try:
            return parse_html(page.read_text(encoding="utf-8", errors="replace"), page_url, engine, index)
        except ValueError as err:
            raise SourceError(f"{page}: {err}", hint="fix the mirror's page (each #sha256= is 64 hex digits)") from None
    for attempt in (1, 2):  # a page that does not parse is asked for once more: a proxy or a line may have mangled it
        try:
            body, content_type, url = session.read(page_url, {"Accept": _ACCEPT})
        except FetchError as err:
            if err.status in (404, 410):
                return None
            raise
        try:
            if content_type == _JSON_TYPE or (content_type.endswith("json") and body.lstrip()[:1] == b"{"):
                return parse_json(json.loads(body), url, engine, index)
            return parse_html(body.decode("utf-8", errors="replace"), url, engine, index)
        except (ValueError, AttributeError) as err:
            if attempt == 2 or session.options.retries == 0:
                raise FetchError(url, f"the index sent a page that does not parse ({err})") from None
            session.wait(attempt, url, "the index sent a page that does not parse")
    return None


def _fetch_files(engine: str, indexes: list[str], session: Session) -> list[Artifact]:
    """Every index's files for the engine, the primary index first (pip merges them the same way)."""
    from compat.sources.network import FetchError

    files: list[Artifact] = []
    seen: set[str] = set()
    listed_anywhere = False
    for position, index in enumerate(indexes):
        try:
            found = _project_files(index, engine, session)
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


def forget_listing(cache: Path, engine: str) -> None:
    """Drop the cached listing: the next run asks the index again."""
    with contextlib.suppress(OSError):
        listing_path(cache, engine).unlink()


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


def recent_listing(engine: str, indexes: list[str], cache: Path, offline: bool) -> Listing | None:
    """The cached listing: offline whatever its age (SourceError when there is none), online when younger than
    LISTING_TTL and of the same indexes; None: ask the index (fetch_listing)."""
    cached = _read_listing(cache, engine)
    if offline:
        if cached is None:
            raise SourceError(
                f"offline and no index listing of {engine} in the cache {listing_path(cache, engine)}",
                hint=f"pin a cached release (e.g. --engine {engine}==X.Y.Z; cached: {', '.join(cached_versions(cache, engine)) or 'none'}) "
                "or run once online",
            )
        return Listing(cached["files"], indexes, True)
    if cached and cached.get("indexes") == indexes and 0 <= time.time() - cached.get("fetched_at", 0) < LISTING_TTL:
        return Listing(cached["files"], indexes, True)
    return None


def fetch_listing(engine: str, indexes: list[str], cache: Path, session: Session) -> Listing:
    """Ask every index for the engine's files, and keep the answer in the cache."""
    files = _fetch_files(engine, indexes, session)
    _write_listing(cache, engine, indexes, files)
    return Listing(files, indexes, False)
