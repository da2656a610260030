"""The release was not named and none is installed: every release of the engine is searched, and the answer says
which releases raise each message.

The text is read once per release against that release's sites (its error_sites fact, kept in the facts cache),
which says for each error which releases raise or log that message, and where; a traceback's frames say which
releases have that code at those lines. The text is then explained against the release that fits best (every
frame its code, then the most frames that are, then the most errors found, then the most of the text its messages
say, then the newest), and each finding says the releases that raise it.
When the text names releases (a log's `vLLM API server version 0.32.0`), those are searched instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from compat import engines
from compat.core.errors import SourceError
from compat.explain.analysis import analyse
from compat.explain.pasted import read_pasted
from compat.explain.sites import SiteIndex
from compat.explain.text import Line
from compat.core.tree import EngineTree

_INDEXES: dict[tuple, SiteIndex] = {}


@dataclass
class Reading:
    """What one release makes of the text."""

    version: str
    templates: dict[str, str]  # template of each error or warning found -> its site in this release
    errors: int
    fits: bool | None  # every traceback frame shows this release's code (None: no frame)
    tree: EngineTree
    literal: int = 0  # literal characters of the messages the text holds whole (a fragment's count for nothing)
    fragments: dict[int, str] | None = None  # line of the text -> the site of the message it is a fragment of
    frames_fit: int = 0  # traceback frames whose line shows this release's code


def release_index(tree: EngineTree) -> SiteIndex:
    """The release's error sites, indexed (kept in the facts cache apart from the whole report: 40 releases load in
    a fraction of the time)."""
    from compat import facts

    key = (tree.engine, str(tree.root), tree.version)
    index = _INDEXES.get(key)
    if index is None:
        sites = facts.memo(tree, "explain-sites", None, lambda: _sites(tree))
        if not sites:
            raise SourceError(f"{tree.engine} {tree.version}: no error sites could be read")
        index = _INDEXES[key] = SiteIndex(sites)
    return index


def _sites(tree: EngineTree) -> list[dict] | None:
    """The error_sites fact: from the release's probe report when it is kept, else by its one probe (a release
    searched only for its messages is not probed whole)."""
    from compat.probes import all_probes
    from compat.report import cached_fact

    kept = cached_fact(tree, "error_sites")
    if isinstance(kept, dict):
        return kept.get("sites") or None
    probe = next((p for p in all_probes(tree.engine) if p.key == "error_sites"), None)
    value = probe(tree) if probe is not None else None
    return (value or {}).get("sites") or None


def versions_to_search(engine: str, cache_dir, offline: bool) -> list[str]:
    """Every final release in compat's range, newest first (offline: the ones the listing or the cache has)."""
    from compat.sources.cache import cache_root, cached_versions
    from compat.sources.released import list_releases

    known = engines.find(engine)
    spec = SpecifierSet(known.default_releases if known is not None else "")  # the ones compat covers (the matrix's)
    try:
        listed = list_releases(engine, cache_dir=cache_dir, offline=offline)
    except SourceError:
        listed = []
    if offline:
        cached = set(cached_versions(cache_root(cache_dir), engine))
        listed = [v for v in listed if v in cached] or sorted(cached, key=Version)
    found = [v for v in listed if spec.contains(v) and not Version(v).is_prerelease]
    return sorted(found, key=Version, reverse=True)


def read_release(tree: EngineTree, replay: Callable[[], Iterator[Line]]) -> Reading:
    index = release_index(tree)
    lines_of: dict[str, list[str] | None] = {}

    def source_line(relpath: str, number: int) -> str | None:
        if relpath not in lines_of:
            lines_of[relpath] = tree.text(relpath).split("\n") if tree.exists(relpath) else None
        text = lines_of[relpath]
        return text[number - 1] if text is not None and 0 < number <= len(text) else None

    evidence = analyse(replay(), tree.engine, index, source_line)
    unplaced = read_pasted(evidence, index)
    templates = {e.site.template: e.site.location for e in evidence.events if e.site is not None}
    errors = sum(1 for e in evidence.events if e.site is not None and e.site.kind != "log")
    checked = [c for c in evidence.frame_checks if c[3] is not None]
    fits = None if not checked else all(c[3] for c in checked)
    literal = sum(e.site.literal_length for e in evidence.events if e.site is not None and e.match is None)  # whole
    fragments = {e.line: e.site.location for e in evidence.events if e.site is not None and e.match is not None}
    for near in unplaced:  # a fragment of several of this release's messages: it raises the text too
        if near.get("ambiguous_fragment"):
            fragments.setdefault(near["line"], near["sites"][0]["site"])
    return Reading(tree.version or "?", templates, errors, fits, tree, literal, fragments, sum(1 for c in checked if c[3]))


def best(readings: list[Reading]) -> Reading:
    """Every frame this release's code, then the most frames that are (a release without the frames' files shows
    none of them), then the most errors found, then the most of the text said by messages the
    text holds whole (a release that raises only the head of the text's message, `Model does not support EAGLE3
    interface`, did not write `... interface but aux_hidden_state_outputs was requested`; one whose message the text
    is only a fragment of did not write the text), then the newest."""
    return max(readings, key=lambda r: (r.fits is True, r.frames_fit, r.errors, len(r.templates), r.literal,
                                        Version(r.version)))


def raised_in(finding: dict, readings: list[Reading]) -> dict | None:
    """The releases whose text reading found this message, and where each raises it. A fragment (the finding's
    `match`) is raised by every release with a message it is a fragment of, whatever the rest of that message."""
    template, line = finding.get("template"), int(finding.get("line") or 0)
    if not template:
        return None
    where: dict[str, list[str]] = {}
    for reading in readings:
        site = (reading.fragments or {}).get(line) if finding.get("match") else reading.templates.get(template)
        if site is not None:
            where.setdefault(site, []).append(reading.version)
    versions = sorted((v for vs in where.values() for v in vs), key=Version)
    searched = sorted((r.version for r in readings), key=Version)
    return {"versions": versions, "ranges": ranges(versions, searched),
            "sites": {site: sorted(vs, key=Version) for site, vs in where.items()}}


def ranges(versions: list[str], searched: list[str]) -> str:
    """`0.10.0 - 0.17.1, 0.19.0`: runs of consecutive searched releases."""
    have = set(versions)
    runs: list[list[str]] = []
    previous_in = False
    for version in searched:
        if version in have:
            if previous_in:
                runs[-1].append(version)
            else:
                runs.append([version])
        previous_in = version in have
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]} - {run[-1]}" for run in runs) or "none"


def later_releases(engine: str, version: str | None, cache_dir, offline: bool, progress: bool = False
                   ) -> tuple[Callable[[], tuple[str, ...]], Callable[[str], SiteIndex | None],
                              Callable[[str], EngineTree | None]]:
    """How to list the releases compat covers after `version` (ascending; asked only when a check needs them), how
    to read one's sites, and how to open its source (None: it cannot be had)."""
    from functools import lru_cache

    from compat.sources import open_tree

    @lru_cache(maxsize=64)
    def tree_of(release: str) -> EngineTree | None:
        try:
            return open_tree(f"{engine}=={release}", cache_dir=cache_dir, offline=offline, progress=progress)
        except SourceError:
            return None

    def index_of(release: str) -> SiteIndex | None:
        from compat.core.console import heartbeat

        tree = tree_of(release)
        try:
            with heartbeat("explain", progress) as beat:
                beat.state = f"reading where {engine} {release} raises"
                return release_index(tree) if tree is not None else None
        except SourceError:
            return None

    @lru_cache(maxsize=1)
    def later() -> tuple[str, ...]:
        try:
            after = Version(Version(version or "").public)
        except ValueError:
            return ()
        return tuple(sorted((v for v in versions_to_search(engine, cache_dir, offline) if Version(v) > after),
                            key=Version))

    return later, index_of, tree_of
