"""The launch line passes the release's own validation: every raise and assert on the way from the line to the
speculative config, as the release's code reads them (the spec_validation probe fact), walked with the line's
values, the release's defaults for what the line leaves out, and the target's and drafter's configs (compat/guards/).

A raise the values reach is the release's refusal at start-up: FAIL with its message (holes filled), its file:line,
and the fix (a value of the key its guard reads that gets through, else the first release that lets the line
through). A raise on a path the values do not settle is WARN "cannot tell", naming what was unknown; the verdict is
then not "works as is". Where the release's own build ran on this line (the preflight: `--python`), it decides, and a
static reading that disagrees with it is shown beside it."""

from __future__ import annotations

import hashlib
import json

from compat.checks import ANY_METHOD, FAIL, PASS, WARN, Ctx, LaterRelease, Result, check
from compat.checks._release_code import FACT, given_of, outcome_of, spec_edits
from compat.guards.run import evaluate
from compat.guards.outcome import Outcome, Raised

MAX_UNKNOWN = 4  # what was unknown, named in the one line


@check("release-validation", "launch line: the release's own validation lets it through (its raises, read and evaluated)",
       order=6, needs=("release validation",), fixes=("line", "release"), when="launch", methods=ANY_METHOD)
def release_validation(ctx: Ctx) -> Result:
    outcome = outcome_of(ctx)
    preflight = ctx.options.preflight
    decided_by = None if preflight is None else preflight.decides(str(ctx.version) if ctx.version else None,
                                                                  ctx.options.platform, ctx.options.launch)
    if outcome is None:
        return Result(WARN, f"cannot tell: this release's validation code was not read ({FACT})", None)
    static = _static(ctx, outcome)
    if preflight is not None and decided_by is None:
        return _by_preflight(ctx, outcome, static)
    if preflight is not None:
        static.evidence["preflight_not_used"] = decided_by
    return static


def _static(ctx: Ctx, outcome: Outcome) -> Result:
    evidence = {"validation": _json(outcome)}
    refused = outcome.refused
    if refused is not None:
        site = refused.site
        given = given_of(ctx)
        edits = tuple(spec_edits(ctx, outcome, given)) if given is not None else ()
        later = _first_release(ctx) if not edits else None
        detail = (f"{ctx.engine} {ctx.version} refuses this line at start-up: {site.exception or 'it raises'}: {site.message} "
                  f"({site.function}, {site.location})")
        if refused.alternatives:
            detail += "; on other paths: " + "; ".join(f"{s.message} ({s.location})" for s in refused.alternatives)
        return Result(FAIL, detail, site.location, evidence=evidence, edits=edits,
                      release=LaterRelease(later or None, none_later=later == "") if later is not None else None,
                      remedy=None if edits or later else "change the line: " + (", ".join(refused.reads[:3]) or "the settings above")
                      + " as the release's check at " + site.location + " wants")
    if outcome.maybe:
        unknown = _unknown(outcome.maybe)
        return Result(WARN, f"cannot tell whether {ctx.engine} {ctx.version} lets this line through: "
                      f"{len(outcome.maybe)} raise(s) depend on what doctor cannot read ({'; '.join(unknown)}); first: "
                      f"{outcome.maybe[0].site.message[:160]} ({outcome.maybe[0].site.location})", outcome.maybe[0].site.location,
                      evidence=evidence, undecided=True)
    return Result(PASS, f"the release's validation lets the line through ({outcome.steps} statements read"
                  + (f"; {len(outcome.unread)} functions kept as what they set, in --json" if outcome.unread else "") + ")",
                  None, evidence=evidence)


def _by_preflight(ctx: Ctx, outcome: Outcome, static: Result) -> Result:
    preflight = ctx.options.preflight
    assert preflight is not None
    evidence = {**static.evidence, "decided_by": "preflight"}
    said = "refuses" if outcome.refused is not None else "cannot tell" if outcome.maybe else "lets it through"
    if preflight.ok:
        agree = outcome.refused is None
        detail = f"{ctx.engine} {preflight.release}'s own build took the line ({preflight.python})"
        if not agree:
            detail += f"; doctor's reading of its code said it {said}: {static.detail} (a fault in compat's reading)"
        return Result(PASS, detail, None, evidence={**evidence, "agree": agree})
    error = preflight.error or {}
    site = error.get("site")
    agree = outcome.refused is not None and outcome.refused.site.location == site
    detail = (f"{ctx.engine} {preflight.release}'s own build refuses this line: {error.get('type')}: "
              f"{str(error.get('message', ''))[:400]} ({site or 'no site in its files'})")
    if not agree:
        detail += f"; doctor's reading of its code said it {said}" + (f" ({static.detail})" if outcome.refused or outcome.maybe else "")
    return Result(FAIL, detail, site, evidence={**evidence, "agree": agree}, edits=static.edits, release=static.release,
                  remedy=static.remedy or "change the line as the release's message says")


def _first_release(ctx: Ctx) -> str | None:
    given = given_of(ctx)
    if given is None:
        return None
    keys = ctx.fact("speculative_config").get("rejects_unknown_keys")

    def holds(report: dict) -> bool:
        fact = report.get(FACT)
        if not isinstance(fact, dict) or not fact.get("present"):
            return False
        later_keys = (report.get("speculative_config") or {}).get("rejects_unknown_keys")
        return evaluate(fact, given, extra_keys="forbid" if later_keys else None).verdict == "passes"

    name = "release-validation:" + hashlib.sha256(json.dumps([given.spec, given.settings, keys, given.platform],
                                                             sort_keys=True, default=str).encode()).hexdigest()[:16]
    return ctx.first_release_where(name, holds)


def _unknown(maybe: list[Raised]) -> list[str]:
    seen: dict[str, None] = {}
    for raised in maybe:
        if raised.unknown:
            seen[raised.unknown[-1]] = None
    return list(seen)[:MAX_UNKNOWN]


def _json(outcome: Outcome) -> dict:
    out: dict = {"verdict": outcome.verdict, "statements": outcome.steps}
    if outcome.refused is not None:
        out["refused"] = outcome.refused.to_json()
    if outcome.maybe:
        out["maybe"] = [m.to_json() for m in outcome.maybe[:8]]
    if outcome.unread:
        out["unread"] = outcome.unread
    return out
