"""Which version and which artifact: pip's rules, applied to a listing (index.py) or to the cache.

- `latest` is the highest final release; a specifier picks the highest match.
- Pre/dev releases only when the specifier names one; yanked files only when pinned with `==`.
- The artifact: the smallest that holds the source: the sdist, else the smallest wheel.

No I/O and no network here: a cached `==X` is decided with `parse_specifier` and `is_exact_pin` alone.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from compat.core.errors import SourceError, UsageError

__all__ = ["Artifact", "Choice", "parse_specifier", "is_exact_pin", "final_releases", "choose"]


@dataclass(frozen=True)
class Artifact:
    """One file an index lists for the engine (pages.py reads them from the index, index.py caches them)."""

    filename: str
    url: str
    version: str
    kind: str  # "sdist" | "wheel"
    sha256: str | None
    size: int | None
    yanked: bool
    index: str


@dataclass(frozen=True)
class Choice:
    """The release a specifier picks from a listing, and its artifacts best first (the sdist, else the smallest wheel)."""

    version: str
    artifacts: list[Artifact]


def parse_specifier(specifier: str) -> SpecifierSet | None:
    """None for "latest"; UsageError for text that is not a specifier."""
    text = (specifier or "").strip()
    if text.lstrip("=").strip().lower() in ("latest", ""):
        return None
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise UsageError(f"{specifier!r} is not a version specifier", hint="e.g. ==0.11.0, '>=0.18,<0.20' or latest") from None


def is_exact_pin(spec: SpecifierSet | None) -> bool:
    return spec is not None and bool(spec) and all(s.operator in ("==", "===") and not s.version.endswith(".*") for s in spec)


def _final(version: Version) -> bool:
    return not (version.is_prerelease or version.is_devrelease)


def final_releases(files: list[Artifact]) -> list[Version]:
    """Final versions with at least one file that is not yanked, ascending."""
    return sorted({Version(f.version) for f in files if not f.yanked and _final(Version(f.version))})


def choose(engine: str, spec: SpecifierSet | None, files: list[Artifact], where: str) -> Choice:
    """The version `spec` picks and its artifacts; SourceError naming the closest versions when none matches."""
    exact = is_exact_pin(spec)
    allow_pre = bool(spec is not None and spec.prereleases)
    by_version: dict[Version, list[Artifact]] = {}
    for artifact in files:
        by_version.setdefault(Version(artifact.version), []).append(artifact)
    matching: list[Version] = []
    excluded: list[str] = []
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
        finals = final_releases(files)
        newest = f"newest: {finals[-1]}" if finals else "no final release listed"
        wanted = "latest" if spec is None else str(spec)
        hint = "; ".join(excluded[:3]) or f"closest available: {', '.join(map(str, _closest(finals, spec)))}"
        raise SourceError(f"no release of {engine} matches {wanted} on {where} ({newest})", hint=hint)
    version = max(matching)
    order = {"sdist": 0, "wheel": 1}
    usable = [a for a in by_version[version] if exact or not a.yanked]
    artifacts = sorted(usable, key=lambda a: (a.yanked, order[a.kind], a.size if a.size is not None else 1 << 62, a.filename))
    return Choice(str(version), artifacts)


def _closest(versions: list[Version], spec: SpecifierSet | None, around: int = 2) -> list[Version]:
    """The versions on either side of the first version the specifier names (else the newest few)."""
    named: list[Version] = []
    for item in spec or ():
        with contextlib.suppress(InvalidVersion):
            named.append(Version(item.version.removesuffix(".*")))
    if not versions or not named:
        return versions[-2 * around:]
    target = min(named)
    below = [v for v in versions if v < target][-around:]
    above = [v for v in versions if v >= target][:around]
    return below + above
