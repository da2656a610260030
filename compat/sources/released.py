"""Released engines: a vLLM/SGLang release's Python source, fetched from the package index into the user cache.

`--engine vllm==0.11.0` / `--engine 'sglang>=0.5.8,<0.6'` / `--engine vllm==latest` end here. One value,
a `Resolver`, walks a request once: the cached entry, else the listing, the choice and the entry it names,
each settled once and kept. Each step has its own module:

- choice.py:   which version (`latest` = the highest final release, a specifier its highest match;
               pre/dev releases only when named, yanked files only when pinned with `==`) and which
               artifact (the sdist, else the smallest wheel);
- settings.py: how to reach the index, settled as pip settles it (--index-url/--retries/--timeout,
               PIP_* variables, pip.conf; CA bundles, proxies);
- index.py:    the indexes and what they list (PEP 691 JSON, PEP 503 HTML, `file://` mirrors), the listing
               cached so `latest` and ranges resolve offline;
- network.py:  HTTP with pip's retries and back-off, resumed bodies, credentials (auth.py), TLS, proxies;
  ranged.py:   ranged reads of a wheel (only its central directory and `.py` members travel);
- archives.py: only the package's `.py` files, never outside the destination;
- download.py: build the release in a temp dir, verify (sha256, CRC), write its manifest, rename into place;
- cache.py:    `<cache>/releases/<engine>/<version>/` + `manifest.json` + `release.json`, a `flock` per
               release so several processes fetching it download it once; manifest.py checks an entry on use;
- progress.py: what the user sees meanwhile (a bar on a terminal that says when it waits).

A cached `==X` needs no network and imports none of index/network/download (a cached `==X.Y.Z` not
even `packaging`): it is answered from the cache alone, in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from compat import engines
from compat.core.errors import SourceError
from compat.core.tree import EngineTree
from compat.sources.cache import CacheEntry, cache_root, cached_pin, cached_release, cached_versions, listing_path, plain_pin

TYPE_CHECKING = False  # packaging and index.py are imported only when the cache cannot answer
if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

    from compat.sources.choice import Choice
    from compat.sources.index import Listing
    from compat.sources.network import Session
    from compat.sources.settings import NetworkOptions

__all__ = ["Resolver", "fetch_release", "list_releases", "cache_root"]


@dataclass
class Resolver:
    """One request for a release of one engine, walked once: each step's answer is kept for the next one."""

    engine: str
    specifier: str  # "latest", "==0.11.0", ">=0.18,<0.20"
    cache: Path
    offline: bool = False
    index_url: str | None = None
    progress: bool = True
    network: NetworkOptions | None = None  # None: settled from the command line, pip's variables and config
    _listing: Listing | None = field(default=None, init=False, repr=False)
    _choice: Choice | None = field(default=None, init=False, repr=False)

    @classmethod
    def of(cls, engine: str, specifier: str = "latest", *, cache_dir: str | Path | None = None, offline: bool = False,
           index_url: str | None = None, progress: bool = True, network: NetworkOptions | None = None) -> Resolver:
        engines.get(engine)  # a UsageError naming the engines when it is none of them
        return cls(engine, specifier, cache_root(cache_dir), offline, index_url, progress, network)

    @cached_property
    def options(self) -> NetworkOptions:
        """The index and how to talk to it, settled once for this request (settings.py)."""
        import dataclasses

        from compat.sources.settings import NetworkOptions

        if self.network is None:
            return NetworkOptions.resolve(index_url=self.index_url)
        return dataclasses.replace(self.network, index_url=self.index_url) if self.index_url else self.network

    @cached_property
    def session(self) -> Session:
        """The network, with this request's options and progress (imported only when the cache cannot answer)."""
        from compat.sources.network import Session
        from compat.sources.progress import Progress

        return Session(self.options, Progress(self.progress))

    # -- the steps, each settled once -----------------------------------------------------------------

    @cached_property
    def spec(self) -> SpecifierSet | None:
        """The specifier parsed (None for latest); UsageError for text that is not one."""
        from compat.sources.choice import parse_specifier

        return parse_specifier(self.specifier)

    def cached(self) -> CacheEntry | None:
        """The complete cached release an exact pin names: from the folder names alone when they decide it."""
        pinned = plain_pin(self.specifier)
        if pinned is not None:  # the common case, answered without packaging
            hit = cached_release(self.cache, self.engine, pinned)
            if hit is not None:
                return hit
        spec = self.spec
        if spec is not None and self.exact:
            return cached_pin(self.cache, self.engine, spec)
        if self.offline and not listing_path(self.cache, self.engine).is_file():
            return self._newest_cached(spec)
        return None

    def _newest_cached(self, spec: SpecifierSet | None) -> CacheEntry | None:
        """Offline with no index listing in the cache: `latest` (or a range) is the newest cached release it matches,
        said once; what the index has since is not known (run once online)."""
        from compat.sources.choice import parse_specifier

        wanted = spec if spec is not None else parse_specifier(">=0")
        assert wanted is not None
        hit = cached_pin(self.cache, self.engine, wanted)
        if hit is not None and self.progress:
            import sys

            print(f"note: offline, and no index listing in the cache: {self.engine} {self.specifier} is taken as the newest "
                  f"cached release, {hit.version}", file=sys.stderr, flush=True)
        return hit

    def listing(self, *, fresh: bool = False) -> Listing:
        """What the indexes list (the cached listing when recent, or offline; `fresh`: the indexes asked again)."""
        if self._listing is None or fresh:
            from compat.sources.index import fetch_listing, index_urls, recent_listing

            indexes = self._listing.indexes if self._listing is not None else index_urls(options=self.options)
            found = None if fresh else recent_listing(self.engine, indexes, self.cache, self.offline)
            self._listing = found or fetch_listing(self.engine, indexes, self.cache, self.session)
        return self._listing

    def choice(self) -> Choice:
        """The release the specifier picks from the listing; a cached listing that lacks it is asked again online."""
        if self._choice is None:
            from compat.sources.choice import choose

            listing = self.listing()
            try:
                self._choice = choose(self.engine, self.spec, listing.files, listing.where)
            except SourceError:
                if self.offline or not listing.from_cache:
                    raise
                listing = self.listing(fresh=True)  # a release newer than the cached listing?
                self._choice = choose(self.engine, self.spec, listing.files, listing.where)
        return self._choice

    # -- the answers ----------------------------------------------------------------------------------

    def version(self) -> str:
        """The version the request names, without fetching its tree (a cached release, else the listing)."""
        hit = self.cached()
        return hit.version if hit is not None else self.choice().version

    def tree(self) -> EngineTree:
        """The release's source tree: from the cache, else fetched into it (once, whatever other processes do).

        A cached release that fails its manifest (a file cut short or gone) is fetched again; offline it is
        refused, with `compat cache clean` as the fix."""
        hit = self.cached()
        if hit is not None:
            if self._sound(hit):
                return hit.tree(cached=True)
        elif self.offline and self.exact:  # a pin needs no listing to know it is not here
            raise self._not_cached(f"{self.engine}{self.spec}")
        choice = self.choice()
        entry = CacheEntry(self.cache, self.engine, choice.version)
        if entry != hit and entry.is_complete() and self._sound(entry):
            return entry.tree(cached=True)
        if self.offline:
            raise self._not_cached(f"{self.engine}=={choice.version}")
        from compat.sources.download import HashMismatch, download
        from compat.sources.index import forget_listing
        from compat.sources.manifest import forget

        try:
            with entry.lock(self.session.progress):
                forget(entry.path)  # another process may have fetched it again while we waited
                if entry.is_complete() and not entry.damage():
                    return entry.tree(cached=True)
                return download(entry, choice.artifacts, self.session)
        except HashMismatch:
            forget_listing(self.cache, self.engine)  # the hashes it lists may be what was mangled: ask again next time
            raise
        except OSError as err:  # the cache, not the network (network errors are SourceErrors already)
            from compat.sources.cache import cache_os_error

            raise cache_os_error(err, self.cache, f"writing {self.engine} {choice.version} into it") from None

    def _sound(self, entry: CacheEntry) -> bool:
        """True when the complete entry matches its manifest; a damaged one is said once, then fetched again."""
        problem = entry.damage()
        if problem is None:
            return True
        if self.offline:
            raise self._damaged(entry)
        if self.progress:
            import sys

            print(f"note: the cached {entry.engine} {entry.version} is damaged ({problem}): fetching it again",
                  file=sys.stderr, flush=True)
        return False

    def _damaged(self, entry: CacheEntry) -> SourceError:
        return SourceError(
            f"the cached {entry.engine} {entry.version} in {entry.path} is damaged: {entry.damage()}",
            hint=f"compat cache clean {entry.engine}=={entry.version}, then run without --offline to fetch it again",
        )

    def releases(self) -> list[str]:
        """Final, not-yanked versions on the index, ascending (offline: from the cached listing)."""
        from compat.sources.choice import final_releases

        return [str(v) for v in final_releases(self.listing().files)]

    @property
    def exact(self) -> bool:
        """`==X` (no wildcard): the one release it names may be in the cache, no listing needed."""
        from compat.sources.choice import is_exact_pin

        return is_exact_pin(self.spec)

    def _not_cached(self, wanted: str) -> SourceError:
        return SourceError(
            f"offline and {wanted} is not in the cache {self.cache / 'releases' / self.engine}",
            hint=f"run once without --offline to fetch it (cached: {', '.join(cached_versions(self.cache, self.engine)) or 'none'})",
        )


def list_releases(engine: str, *, index_url: str | None = None, cache_dir: str | Path | None = None, offline: bool = False,
                  network: NetworkOptions | None = None) -> list[str]:
    """Final, not-yanked versions of `engine` on the index, ascending (offline: from the cached listing)."""
    return Resolver.of(engine, cache_dir=cache_dir, offline=offline, index_url=index_url, network=network).releases()


def fetch_release(
    engine: str,
    specifier: str,
    *,
    cache_dir: str | Path | None = None,
    offline: bool = False,
    progress: bool = True,
    index_url: str | None = None,
    network: NetworkOptions | None = None,
) -> EngineTree:
    """The source tree of the release of `engine` that `specifier` ("latest", "==0.11.0", ">=0.18,<0.20") picks."""
    return Resolver.of(engine, specifier, cache_dir=cache_dir, offline=offline, index_url=index_url, progress=progress,
                       network=network).tree()
