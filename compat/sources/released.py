"""Released engines: a vLLM/SGLang release's Python source, fetched from the package index into the user cache.

`--engine vllm==0.11.0` / `--engine 'sglang>=0.5.8,<0.6'` / `--engine vllm==latest` end here. This module
is the orchestration; each step has its own module:

- choice.py:   which version (`latest` = the highest final release, a specifier its highest match;
               pre/dev releases only when named, yanked files only when pinned with `==`) and which
               artifact (the sdist, else the smallest wheel);
- index.py:    the index pip would use (PIP_INDEX_URL, pip.conf) and what it lists (PEP 691 JSON,
               PEP 503 HTML, `file://` mirrors), the listing cached so `latest` and ranges resolve offline;
- network.py:  HTTP, credentials, TLS, and ranged reads of a wheel (only its central directory and
               `.py` members travel);
- archives.py: only the package's `.py` files, never outside the destination;
- download.py: build the release in a temp dir, verify, rename into place;
- cache.py:    `<cache>/releases/<engine>/<version>/` + `release.json`, a `flock` per release so two
               processes fetching the same release download it once.

A cached `==X` needs no network and imports none of index/network/download (a cached `==X.Y.Z` not
even `packaging`): it is answered from the cache alone, in milliseconds.
"""

from __future__ import annotations

from pathlib import Path

from compat.errors import SourceError, UsageError
from compat.sources.cache import (
    cache_root, cached_pin, cached_release, cached_versions, is_complete, plain_pin, release_dir, release_lock, release_tree,
)
from compat.tree import ENGINES, EngineTree

__all__ = ["fetch_release", "list_releases", "cache_root"]


def list_releases(engine: str, *, index_url: str | None = None, cache_dir: str | Path | None = None, offline: bool = False) -> list[str]:
    """Final, not-yanked versions of `engine` on the index, ascending (offline: from the cached listing)."""
    from compat.sources.choice import final_releases
    from compat.sources.index import index_urls, listing

    _check_engine(engine)
    files, _ = listing(engine, index_urls(index_url), cache_root(cache_dir), offline)
    return [str(v) for v in final_releases(files)]


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
    cache = cache_root(cache_dir)
    pinned = plain_pin(specifier)
    if pinned is not None:  # the common case, answered from the folder names alone
        hit = cached_release(cache, engine, pinned)
        if hit is not None:
            return release_tree(hit, engine, cached=True)
    from compat.sources.choice import choose, is_exact_pin, parse_specifier

    spec = parse_specifier(specifier)
    if is_exact_pin(spec):  # a cached pin needs no index at all
        hit = cached_pin(cache, engine, spec)
        if hit is not None:
            return release_tree(hit, engine, cached=True)
        if offline:
            raise _not_cached(engine, f"{engine}{spec}", cache)
    from compat.sources.index import index_urls, listing

    indexes = index_urls(index_url)
    files, from_cache = listing(engine, indexes, cache, offline)
    where = ", ".join(sorted({f.index for f in files}, key=lambda i: indexes.index(i) if i in indexes else 99)) or indexes[0]
    try:
        version, artifacts = choose(engine, spec, files, where)
    except SourceError:
        if offline or not from_cache:
            raise
        files, _ = listing(engine, indexes, cache, offline, fresh=True)  # a release newer than the cached listing?
        version, artifacts = choose(engine, spec, files, where)
    final = release_dir(cache, engine, version)
    if is_complete(final, engine):
        return release_tree(final, engine, cached=True)
    if offline:
        raise _not_cached(engine, f"{engine}=={version}", cache)
    from compat.sources.download import download

    try:
        with release_lock(cache, engine, version, progress):
            if is_complete(final, engine):  # another process fetched it while we waited
                return release_tree(final, engine, cached=True)
            return download(cache, engine, version, artifacts, progress)
    except OSError as err:  # the cache, not the network (network errors are SourceErrors already)
        raise SourceError(
            f"cannot write {engine} {version} into the cache {cache}: {err.strerror or err}",
            hint="free some space or pick another folder with --cache-dir (or XDG_CACHE_HOME)",
        ) from None


def _not_cached(engine: str, wanted: str, cache: Path) -> SourceError:
    return SourceError(
        f"offline and {wanted} is not in the cache {cache / 'releases' / engine}",
        hint=f"run once without --offline to fetch it (cached: {', '.join(cached_versions(cache, engine)) or 'none'})",
    )


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}: expected one of {', '.join(ENGINES)}")
