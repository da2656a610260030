"""The method launched exists in this release, under the name launched (a name the release lacks names the releases
that have it; an alias that runs as another method is said: SGLang's NEXTN is EAGLE, sglang#21272).

The names a release accepts are read from it (the `methods` probe: vLLM's Literal tree, SGLang's enum, registry
class or choices, with their aliases); the family of each name and the releases that have it are the method files'
(methods/*.py, their gates checked against every release). EAGLE-3's own check is `method`.
"""

from __future__ import annotations

from compat.checks import FAIL, PASS, WARN, Ctx, LaterRelease, Result, check
from compat.checks._method import (accepted_names, launched_match, method_edit, name_location, other_families,
                                   release_name, releases_with)
from compat.methods import Name, get_method


@check("method-name", "method: the release has the method launched, under that name", order=68, needs=("methods",),
       fixes=("line", "release"), methods=other_families())
def method_name(ctx: Ctx) -> Result:
    names = accepted_names(ctx)
    if names is None:
        return Result(WARN, "cannot tell: the release's methods were not read (no SpeculativeAlgorithm / method Literal)")
    family = get_method(ctx.method.family)
    own = release_name(ctx, family.family)
    launched = ctx.method.launched or (own.name if own else None)
    release = f"{ctx.engine} {ctx.report.get('version')}"
    if launched is None:
        return _missing(ctx, family.title, family.family, release)
    folded = ctx.fact("methods").get("case") == "folded"  # SGLang upper-cases the name (from_string)
    if launched not in names and not (folded and launched.upper() in names):
        return _not_accepted(ctx, launched, own, release, names)
    match = launched_match(ctx)
    entry = match.name if match is not None else None
    shared = next((n for n in family.engine_names(ctx.engine) if n.shared and n.name == launched), None)
    if shared is not None and not shared.accepted_in(str(ctx.report.get("version"))):
        return _shared_gone(ctx, family.title, shared, release)
    where = name_location(ctx, launched.upper() if folded and launched not in names else launched)
    said = f"{launched!r} is a method of {release}" + (f" ({family.title}: {shared.note})" if shared else "")
    if entry is not None and entry.alias_of:
        said += f"; it is an alias: {release} runs it as {entry.alias_of} ({where})"
    return Result(PASS, said, where)


def _missing(ctx: Ctx, title: str, family: str, release: str) -> Result:
    method = get_method(family)
    first = _first_after(method.engine_names(ctx.engine), str(ctx.report.get("version")))
    return Result(FAIL, f"{release} has no {title} method; the releases that have it: {releases_with(method, ctx.engine)}",
                  ctx.fact("methods").get("location"), release=LaterRelease(first) if first else None,
                  remedy=None if first else f"no {ctx.engine} release runs {title}")


def _not_accepted(ctx: Ctx, launched: str, own: Name | None, release: str, names: list[str]) -> Result:
    match = launched_match(ctx)
    where = ctx.fact("methods").get("location")
    if match is None:
        return Result(FAIL, f"{launched!r} is not a method of {release} (it accepts {', '.join(names)}): the server "
                      "refuses it at start-up", where, remedy="name one of the release's methods")
    if own is not None and own.name != launched:  # the family is here under another spelling
        return Result(FAIL, f"{launched!r} is not how {release} names {match.method.title}: it accepts {own.name!r} "
                      f"({name_location(ctx, own.name)})", where,
                      edits=(method_edit(ctx, own.name, f"{match.method.title} is {own.name!r} in this release"),))
    first = _first_after(match.method.engine_names(ctx.engine), str(ctx.report.get("version")))
    gone = ", ".join(f"{n.name} until {n.until}" for n in match.method.engine_names(ctx.engine) if n.until)
    return Result(FAIL, f"{launched!r} ({match.method.title}) is not a method of {release}; the releases that have it: "
                  f"{releases_with(match.method, ctx.engine)}", where, release=LaterRelease(first) if first else None,
                  remedy=None if first else (f"an earlier release ({gone})" if gone else f"no {ctx.engine} release has it"))


def _shared_gone(ctx: Ctx, title: str, shared: Name, release: str) -> Result:
    """P-EAGLE on vLLM 0.34.0: "eagle3" is still there, but the release serves no P-EAGLE drafter."""
    types = ctx.fact("methods").get("speculators_types") or {}
    raised = (types.get(get_method(ctx.method.family).family) or {}).get("raises")
    evidence = f"; its speculators translation raises {raised} ({types[ctx.method.family]['location']})" if raised else ""
    return Result(FAIL, f"{release} does not serve {title} ({shared.note}: {shared.gate()}){evidence}",
                  ctx.fact("methods").get("location"), remedy=f"{ctx.engine} {shared.gate()} serves {title}")


def _first_after(names: tuple[Name, ...], version: str) -> str | None:
    """The first release after this one that accepts one of the names (the gates'), None: none does."""
    from packaging.version import InvalidVersion, Version

    try:
        now = Version(Version(version).public)
    except InvalidVersion:
        return None
    later = [n.since for n in names if n.since and not n.shared and Version(n.since) > now]
    return min(later, key=Version) if later else None
