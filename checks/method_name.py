"""The method launched exists in this release, under the name launched, and runs as the method meant: each step the
release takes with the name is said (SGLang's NEXTN is EAGLE, sglang#21272; vLLM's deepseek_mtp runs as "mtp"; EAGLE
with a Gemma4 assistant draft is promoted to FROZEN_KV_MTP; vLLM up to 0.33 detects a method from the draft's path
even over an explicit "draft_model").

`doctor --method` takes compat's id of a family and either engine's name for it: `draft_model` asked of SGLang is its
STANDALONE (the printed line names it). A launch line is read as typed: a name the release lacks is refused there,
with the release's own name as the fix. The resolution is checks/_resolve.py's, read from the release's probes; the
family of each name and the releases that have it are the method files' (methods/*.py). EAGLE-3's own check is
`method`.
"""

from __future__ import annotations

from compat.checks import FAIL, PASS, WARN, Ctx, LaterRelease, Result, check
from compat.checks._context import replay_detection
from compat.checks._method import (accepted_names, method_edit, name_location, other_families, release_name,
                                   releases_with)
from compat.checks._resolve import Resolution, resolve
from compat.methods import Name, family_of, get_method


@check("method-name", "method: the release has the method launched, under that name", order=68, needs=("methods",),
       fixes=("line", "release"), methods=other_families())
def method_name(ctx: Ctx) -> Result:
    names = accepted_names(ctx)
    if names is None:
        return Result(WARN, "cannot tell: the release's methods were not read (no SpeculativeAlgorithm / method Literal)")
    family = get_method(ctx.method.family)
    release = f"{ctx.engine} {ctx.report.get('version')}"
    res = resolve(ctx)
    evidence = {"resolution": res.to_json()}
    if res.given is None and ctx.options.launch is not None:
        return _raised(ctx, res, release, evidence) if res.raises else _unnamed(ctx, res, family.title, release, evidence)
    if res.passed is None:
        return _missing(ctx, family.title, family.family, release)
    if res.refused is not None:
        return _not_accepted(ctx, res, release, names)
    if res.raises is not None:
        return _raised(ctx, res, release, evidence)
    shared = next((n for n in family.engine_names(ctx.engine) if n.shared and n.name == res.passed), None)
    if shared is not None and not shared.accepted_in(str(ctx.report.get("version"))):
        return _shared_gone(ctx, family.title, shared, release)
    where = name_location(ctx, res.passed)
    said = f"{res.passed!r} is a method of {release}" + (f" ({family.title}: {shared.note})" if shared else "")
    if res.steps:
        said += "; " + "; ".join(s.words() for s in res.steps)
    runs = res.family if res.runs_as != res.passed else family.family  # a shared name (P-EAGLE's eagle3) is the family's
    if runs is not None and runs != family.family and family.family not in _served(ctx, res.runs_as):
        return Result(FAIL, f"{said}: the release runs {get_method(runs).title}, not {family.title} (the drafter is "
                      "loaded and drafts as the other method)", res.steps[-1].location if res.steps else where, evidence,
                      remedy=f"a draft checkpoint whose path, model_type and architectures {release}'s auto-detection "
                      f"reads as {family.title}, or a release that keeps a configured method")
    return Result(PASS, said, where, evidence)


def _served(ctx: Ctx, name: str | None) -> tuple[str, ...]:
    """The families a name also runs (SGLang's EAGLE runs NextN heads)."""
    match = family_of(ctx.engine, name) if name else None
    return (match.name.serves if match is not None and match.name is not None else ())


def _unnamed(ctx: Ctx, res: Resolution, title: str, release: str, evidence: dict) -> Result:
    """A launch line that names no method: what the release does by itself."""
    own = release_name(ctx, ctx.method.family)
    edits = (method_edit(ctx, own.name, f"name {title} explicitly"),) if own is not None else ()
    said = "; ".join(s.words() for s in res.steps) or "the release's own choice cannot be read"
    where = res.steps[-1].location if res.steps else None
    if res.runs_as is None:
        return Result(FAIL, f"the launch line names no method: {said}", where, evidence, edits=edits)
    if res.family != ctx.method.family and ctx.method.family not in _served(ctx, res.runs_as):
        return Result(FAIL, f"the launch line names no method: {release} runs it as {res.runs_as!r}, not {title} ({said})",
                      where, evidence, edits=edits)
    verdict = PASS if res.certain else WARN
    return Result(verdict, f"the launch line names no method: {said}" + ("" if res.certain else " (a test before it "
                  "reads what doctor cannot see)") + "; the printed line names it", where, evidence, edits=edits)


def _raised(ctx: Ctx, res: Resolution, release: str, evidence: dict) -> Result:
    """The release's own resolution raises for the method (vLLM up to 0.13: "Speculative decoding with draft model is
    not supported yet", vllm#31883): the first later release whose resolution does not."""
    said = "; ".join(s.words() for s in res.steps)
    first = ctx.first_release_where(f"method {res.passed} resolves without a raise for {ctx.drafter.path}",
                                    lambda report: not (replay_detection(ctx.with_report(report), res.passed) or {}).get("raises"))
    own = release_name(ctx, ctx.method.family) if res.given is None else None  # naming it may keep it from the raise
    edits = (method_edit(ctx, own.name, f"name {get_method(ctx.method.family).title} explicitly"),) if own else ()
    what = f"for {res.runs_as!r} there: it does not serve it" if res.runs_as else "there: it serves no line without a method"
    return Result(FAIL, (f"{said}; " if said else "") + f"{release} raises {res.raises} {what}", res.raises_at, evidence, release=LaterRelease(first) if first else None,
                  remedy=None if first else "another method", edits=edits)


def _missing(ctx: Ctx, title: str, family: str, release: str) -> Result:
    method = get_method(family)
    first = _first_after(method.engine_names(ctx.engine), str(ctx.report.get("version")))
    return Result(FAIL, f"{release} has no {title} method; the releases that have it: {releases_with(method, ctx.engine)}",
                  ctx.fact("methods").get("location"), release=LaterRelease(first) if first else None,
                  remedy=None if first else f"no {ctx.engine} release runs {title}")


def _not_accepted(ctx: Ctx, res: Resolution, release: str, names: list[str]) -> Result:
    launched = str(res.passed)
    match = family_of(ctx.engine, launched)
    where = ctx.fact("methods").get("location")
    evidence = {"resolution": res.to_json()}
    if match is None:
        plugins = ctx.fact("methods").get("plugins") or {}
        how = plugins.get("how") or plugins.get("register")
        plugin = (f" unless a plugin adds it ({how}, {plugins.get('location')}; the serving venv's plugins are not read "
                  "here)" if how and launched not in (plugins.get("reserved") or []) else "")
        return Result(FAIL, f"{launched!r} is not a method of {release} (it accepts {', '.join(names)}): the server "
                      f"refuses it at start-up{plugin}", where, evidence, remedy="name one of the release's methods")
    own = release_name(ctx, match.method.family)
    if own is not None and own.name != launched:  # the family is here under another spelling
        whose = {"family": " (compat's id of it)", "other": f" ({match.other_engine}'s name for it)"}.get(match.how, "")
        return Result(FAIL, f"{launched!r}{whose} is not how {release} names {match.method.title}: it accepts {own.name!r} "
                      f"({name_location(ctx, own.name)}); the server refuses {launched!r} at start-up", where, evidence,
                      edits=(method_edit(ctx, own.name, f"{match.method.title} is {own.name!r} in this release"),))
    first = _first_after(match.method.engine_names(ctx.engine), str(ctx.report.get("version")))
    gone = ", ".join(f"{n.name} until {n.until}" for n in match.method.engine_names(ctx.engine) if n.until)
    return Result(FAIL, f"{launched!r} ({match.method.title}) is not a method of {release}; the releases that have it: "
                  f"{releases_with(match.method, ctx.engine)}", where, evidence, release=LaterRelease(first) if first else None,
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
