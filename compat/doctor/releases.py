"""Which later release first has a fact (an architecture in its registry, ...): for fixes that say
"it arrives in 0.15.0". Facts only ever appear in these registries, so the search is a bisection
over the releases after this one, each probed like any other (fetched once, then cached)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from packaging.version import Version

from compat.core.errors import SourceError
from compat.core.tree import EngineTree


class ReleaseFinder:
    """finder(fact, key, after): the first release after `after` whose fact has key; "" none; None unknown."""

    def __init__(self, engine: str, *, cache_dir: str | Path | None = None, offline: bool = False,
                 open_release: Callable[[str], EngineTree] | None = None, versions: list[str] | None = None) -> None:
        self.engine, self.cache_dir, self.offline = engine, cache_dir, offline
        self._open, self._versions = open_release, versions
        self._memo: dict[tuple[str, str, str | None], str | None] = {}

    def __call__(self, fact: str, key: str, after: str | None) -> str | None:
        if (fact, key, after) not in self._memo:
            self._memo[(fact, key, after)] = self._first(after, lambda report: _holds_key(report, fact, key))
        return self._memo[(fact, key, after)]

    def where(self, name: str, holds: Callable[[dict], bool], after: str | None) -> str | None:
        """The first release after `after` whose probe report makes `holds` true (a drafter tensor its loader takes,
        ...): "" none, None unknown. `name` says what is looked for; the answer is remembered by it."""
        if ("", name, after) not in self._memo:
            self._memo[("", name, after)] = self._first(after, holds)
        return self._memo[("", name, after)]

    def bound(self, after: str | None) -> BoundFinder:
        """This finder for the releases after `after` (a check's `Ctx.releases`)."""
        return BoundFinder(self, after)

    def _first(self, after: str | None, holds: Callable[[dict], bool]) -> str | None:
        try:
            later = [v for v in self._listed() if after is None or Version(v) > Version(Version(after).public)]
        except SourceError:
            return None
        if not later or not self._has(later[-1], holds):
            return ""
        low, high = 0, len(later) - 1  # later[high] has it
        while low < high:
            mid = (low + high) // 2
            if self._has(later[mid], holds):
                high = mid
            else:
                low = mid + 1
        return later[low]

    def _listed(self) -> list[str]:
        from compat.sources.released import list_releases

        versions = self._versions or list_releases(self.engine, cache_dir=self.cache_dir, offline=self.offline)
        return sorted((v for v in versions if not Version(v).is_prerelease), key=Version)

    def _has(self, version: str, holds: Callable[[dict], bool]) -> bool:
        from compat.report import build_report
        from compat.sources.released import fetch_release

        try:
            tree = (self._open or (lambda v: fetch_release(self.engine, f"=={v}", cache_dir=self.cache_dir,
                                                           offline=self.offline, progress=False)))(version)
        except SourceError:
            return False
        report = build_report(tree)
        report["class_loaders"] = class_loaders(tree)  # a check that asks how a later release's class loads
        return holds(report)


def _holds_key(report: dict, fact: str, key: str) -> bool:
    value = report.get(fact)
    return isinstance(value, (dict, list)) and key in value


class BoundFinder:
    """A ReleaseFinder for the releases after one: `(fact, key)` and `.where(name, holds)`, as Ctx.releases asks."""

    def __init__(self, finder: ReleaseFinder, after: str | None) -> None:
        self.finder, self.after = finder, after

    def __call__(self, fact: str, key: str) -> str | None:
        return self.finder(fact, key, self.after)

    def where(self, name: str, holds: Callable[[dict], bool]) -> str | None:
        return self.finder.where(name, holds, self.after)


def class_loaders(tree: EngineTree) -> Callable[[str], dict[str, Any]]:
    """architecture -> how this release's class for it loads a checkpoint (compat.probes.model_loader), read once
    per release and class and kept in the facts cache: doctor reads only the classes a diagnosis needs."""
    from compat import facts
    from compat.probes.model_loader import class_loader

    seen: dict[str, dict[str, Any]] = {}

    def loader(architecture: str) -> dict[str, Any]:
        if architecture not in seen:
            seen[architecture] = facts.memo(tree, "class-loader", architecture, lambda: class_loader(tree, architecture))
        return seen[architecture]

    return loader
