"""Known issues: what code cannot tell, curated by hand, each with its upstream link and version range.

`compat doctor` shows the entries that match the engine release and the target family. An entry:

    id          stable name (tests and --json use it)
    title       one line
    engine      the engine it concerns: the unit that declares it (compat/engines/<name>.py KNOWN_ISSUES)
    versions    PEP 440 specifier of the affected releases (as far as the research established it)
    applies_to  target model_types / architectures it concerns (substring match, lower case);
                ("*",) for every target
    link        the upstream issue or PR (only links recorded in shared/research or verified upstream)
    fix         what to do, in words (a `compat patch` id, a release, a flag)
    fixed_in    the first release without the problem, when known (None: open, or not established)
    checks      (with fixed_in) the doctor checks whose failure it explains: only those are fixed by its release (a
                target's EAGLE-3 capture fixed in 0.5.10 gives nothing to an MTP target without heads)
    verified    (optional) for a link the research notes do not record: what was read upstream, and where
    platform    (optional) the one platform it concerns ("cpu"): such an entry is matched only by a caller that
                knows the platform (explain, reading the CPU runner's refusal), never by doctor, whose inputs
                do not say where the engine runs

The entries live in each engine's unit (`KNOWN_ISSUES` of compat/engines/<name>.py, without `engine`); this module
reads them all. Add an entry when a user-visible failure cannot be read from the engine's source; when a probe
learns to see it, delete the entry. Sources: shared/research/anchors-and-pains.md section 1,
vllm-eagle3.md sections 2-5, sglang-eagle3.md sections 2-5.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # packaging is imported when an entry is matched: the engine units import this module on start-up
    from packaging.version import Version

DEEPSEEK_FAMILY = ("deepseek", "kimi_k2", "kimi_k25", "kimik25")
KIMI = ("kimi_k2", "kimi_k25", "kimik25")


def entries() -> tuple[dict, ...]:
    """Every engine's known issues, in engine order, each with its `engine`."""
    from compat import engines

    return tuple(_with_engine(entry, engine.name) for engine in engines.all_engines() for entry in engine.known_issues)


def _with_engine(entry: dict, engine: str) -> dict:
    """The entry with `engine` after its title, where the entries wrote it when they lived here."""
    out: dict = {}
    for key, value in entry.items():
        out[key] = value
        if key == "title":
            out["engine"] = engine
    out.setdefault("engine", engine)
    return out


def __getattr__(name: str) -> tuple[dict, ...]:
    """`KNOWN_ISSUES`: every unit's entries, read when asked (a unit added on the engines' path is included)."""
    if name == "KNOWN_ISSUES":
        return entries()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _public(version: str) -> Version | None:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(Version(version).public)
    except (InvalidVersion, TypeError):
        return None


def applies(entry: dict, engine: str, version: str | None, model_types: list[str], platform: str | None = None) -> bool:
    """Does `entry` concern this engine release (on `platform`, when the caller knows it) and a target spelled by
    these model types / architectures?"""
    if entry["engine"] != engine or entry.get("platform", platform) != platform:
        return False
    from packaging.specifiers import SpecifierSet

    parsed = _public(version) if version else None
    if parsed is None or not SpecifierSet(entry["versions"]).contains(parsed, prereleases=True):
        return False
    if "*" in entry["applies_to"]:
        return True
    names = [n.lower() for n in model_types if n]
    return any(key in name for key in entry["applies_to"] for name in names)


def matching(engine: str, version: str | None, model_types: list[str], platform: str | None = None) -> list[dict]:
    return [dict(entry) for entry in entries() if applies(entry, engine, version, model_types, platform)]
