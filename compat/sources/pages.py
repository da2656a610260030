"""The project page of a simple index, read: PEP 691 JSON and PEP 503 HTML, as pip's `index/collector.py` does.

Every link becomes an `Artifact` when its file name is an sdist or a wheel of the engine (names parsed
by `packaging.utils`, as pip does); `data-yanked` and the `#sha256=` fragment (HTML) or `yanked` and
`hashes` (JSON) are kept. Nothing here talks to the network: index.py fetches the page.
"""

from __future__ import annotations

import re
import urllib.request
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit, urlunsplit

from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion

from compat.sources.choice import Artifact

__all__ = ["parse_html", "parse_json", "project_name"]

_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


def project_name(engine: str) -> str:
    """The normalized name of the engine's project page (`<index>/<name>/`)."""
    return canonicalize_name(engine)


def _artifact(engine: str, filename: str, url: str, sha256: str | None, size: object, yanked: object, index: str) -> Artifact | None:
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
    if sha256 and not _SHA256.fullmatch(sha256):
        raise ValueError(f"{filename}: {sha256!r} is not a sha256")  # a mangled page: index.py asks for it again
    size = size if isinstance(size, int) and size >= 0 else None
    return Artifact(filename, url, str(version), kind, sha256 or None, size, bool(yanked), index)


class _Anchors(HTMLParser):
    """<a href> of a PEP 503 page, with data-yanked, and <base href>."""

    def __init__(self) -> None:
        super().__init__()
        self.base: str | None = None
        self.links: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        href = found.get("href")
        if tag == "base" and href and self.base is None:
            self.base = href
        elif tag == "a" and href:
            self.links.append((href, "data-yanked" in found))


def parse_html(text: str, page_url: str, engine: str, index: str) -> list[Artifact]:
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


def parse_json(data: dict, page_url: str, engine: str, index: str) -> list[Artifact]:
    out = []
    for row in data.get("files", []):
        found = _artifact(
            engine, row.get("filename", ""), urljoin(page_url, row.get("url", "")),
            (row.get("hashes") or {}).get("sha256"), row.get("size"), row.get("yanked"), index,
        )
        if found:
            out.append(found)
    return out
