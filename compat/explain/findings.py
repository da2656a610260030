"""A finding from an event: the catalog's cause and fix (causes.py, drafter_causes.py, the methods' entries), what the
engine checked at the site (conditions.py), and where the engine was when an error has no raise site of its own."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

from compat.core.identity_memo import IdentityMemo
from compat.explain.analysis import SHORT_INPUT, Event, Evidence
from compat.explain.tracebacks import exception_line
from compat.explain.causes import CATALOG, ERROR, UNRELATED, WARNING, Release, event_text, doctor_fix
from compat.explain.conditions import check_of, first_passing, unguarded
from compat.explain.drafter_causes import DRAFTER_CAUSES
from compat.explain.pydantic_asserts import model_of
from compat.explain.sites import Site
from compat.fix import Fix

if TYPE_CHECKING:  # read when a finding needs them (a log's findings rarely do): imported there
    from compat.explain.levers import Lever, Vocabulary
    from compat.explain.python_errors import Finding as AccessFinding

MESSAGE_LINES = 4  # lines after an exception's that are still its message (pydantic lists the bad key there)


def catalogued(evidence: Evidence, release: Release) -> list[Event]:
    """Lines of a paste no site matched that the catalog's words recognise: a message the engine did not write (a
    library it calls raised it, `OSError: It looks like the config file at ... is not a valid JSON file.`). Their
    finding has the cause and no site (only a traceback's frames say where the engine called it)."""
    if evidence.lines > SHORT_INPUT:
        return []
    taken = {e.line for e in evidence.events}
    found = []
    for line, _ in evidence.unmatched:
        if line.number in taken:
            continue
        exc = exception_line(line.text)
        event = Event(line.number, line.text.strip(), exc[0] if exc else None, None, "message", process=line.process)
        if any(entry.kind == ERROR and entry.applies(event, release) for entry in DRAFTER_CAUSES + CATALOG):
            found.append(event)
    return found


def diagnose(event: Event, release: Release) -> tuple[str, str, Fix | None, str | None]:
    """(kind, cause, fix, catalog id) of an event; an event no entry fits gets the site's own words."""
    for entry in DRAFTER_CAUSES + CATALOG:
        if entry.applies(event, release):
            return entry.kind, entry.cause(event, release), entry.fix(event, release), entry.id
    if event.access is not None:  # an error Python raised at an access of the engine's (python_errors.py)
        from compat.explain.python_errors import cause_of

        return ERROR, cause_of(cast("AccessFinding", event.access), release.engine, release.version, event.exception), \
            doctor_fix(release, "no catalogued fix"), None
    site = event.site
    if site is None and event.candidates and event.located_by.startswith("assert text"):
        return ERROR, (f"the text quotes an assert that {len(event.candidates)} lines of {release.engine} "
                       f"{release.version or ''} make (each listed with what it checks): the text does not say which"), \
            doctor_fix(release, "no catalogued fix"), None
    if site is None and event.candidates and event.located_by == "names in the text":
        return ERROR, (f"the text names no error {release.engine} {release.version or ''} raises; the names it gives "
                       f"are in {len(event.candidates)} of its raises (their message, or what they check: listed); none "
                       "is said to be the site"), doctor_fix(release, "no catalogued fix"), None
    if site is None and event.candidates and event.traceback is not None:
        return ERROR, _unnamed_assert(event), doctor_fix(release, "no catalogued fix"), None
    if site is None:
        return ERROR, _through_frames(event, release), doctor_fix(release, "no catalogued fix"), None
    kind = WARNING if site.kind == "log" else ERROR
    what = f"logged by {site.function}" if site.kind == "log" else f"raised by {site.function or site.file}"
    check = check_of(site, event_text(event))
    said = ""
    if not event.located_by.startswith("message") and site.template.strip("{} "):  # its own words, not in the text
        said = f"; its message: \"{site.template}\""
    if check is not None:
        return kind, f"{what}: {check.describe()}{said}", None if kind == WARNING else doctor_fix(release, "no catalogued fix"), None
    if site.kind == "raise" and not site.guard:
        return kind, unguarded(site, event.traceback, release.engine), doctor_fix(release, "no catalogued fix"), None
    cause = f"{what}; compat's catalog has no cause for this message (the site says what the engine checks)"
    return kind, cause, None if kind == WARNING else doctor_fix(release, "no catalogued fix"), None


def check_finding(event: Event, release: Release, bisect: bool = True) -> dict | None:
    """What the engine checked at the site, read from the source, and the first later release whose check lets the
    user's value pass (bisected over the releases after this one, for an error)."""
    check = check_of(event.site, event_text(event))
    if check is None:
        return None
    out = {"test": check.test, "raises_when": check.raises_when, "names": check.names, "values": check.values,
           "at": f"{check.site.file}:{(check.site.guard or {}).get('line')}", "says": check.describe(),
           "raises_here": check.holds(), "passes_from": None, "passes_how": None}
    if bisect and release.index_of is not None and release.later is not None and check.values and check.holds() is True:
        version, how = first_passing(check, list(release.later()), release.index_of)
        out["passes_from"], out["passes_how"] = version, how
    return out


def _through_frames(event: Event, release: Release) -> str:
    """Where the engine was when an error with no raise site of its own happened (an AttributeError on a missing
    method, a bare assert, an error raised inside torch): its innermost frame, and the code shown there."""
    tb = event.traceback
    inner = tb.innermost(release.engine) if tb is not None else None
    what = event.exception or "an error"
    if tb is None or inner is None:
        return f"{what}; compat's catalog has no cause for this message"
    frame, relpath = inner
    code = f" (`{frame.code}`)" if frame.code else ""
    if tb.frames and tb.frames[-1] is frame:
        by = ("re-raised there" if (frame.code or "").startswith("raise ") and "(" not in (frame.code or "") else
              "raised there, in a file off the speculative-decoding paths compat reads" if (frame.code or "").startswith(("raise", "assert"))
              else f"pydantic's validation of {model_of(tb)} failed there (its validators' frames are not shown)"
              if (event.exception or "").endswith("ValidationError") and model_of(tb)
              else "raised there by Python, not by a raise statement of the engine's")
        how = f"{what} at {relpath}:{frame.line} in {frame.function}{code}: {by}"
    else:
        last = tb.frames[-1] if tb.frames else None
        below = f" ({last.path.rpartition('/')[2]}:{last.line} in {last.function})" if last is not None else ""
        how = f"{what} raised below {release.engine}'s code{below}, called from {relpath}:{frame.line} in {frame.function}{code}"
    cut = f"; the traceback was cut short ({tb.cut})" if tb.cut else ""
    return f"{how}{cut}; compat's catalog has no cause for this message"


def _unnamed_assert(event: Event) -> str:
    model = model_of(event.traceback) if event.traceback is not None else None
    count = len(event.candidates)
    return (f"pydantic's validation of {model} failed an assert that has no message: pydantic shows neither its text "
            f"nor its frame, so which of {model}'s {count} asserts without a message failed cannot be read from the "
            "text (each is listed below with what it checks; the config pydantic was given is in its input_value)")


def _candidate(site: Site) -> dict[str, Any]:
    check = check_of(site, "")
    return {"site": site.location, "function": site.function, "checks": check.describe() if check is not None else None}


def to_finding(event: Event, release: Release) -> dict[str, Any]:
    kind, cause, fix, cause_id = diagnose(event, release)
    check = check_finding(event, release, bisect=kind == ERROR) if kind != UNRELATED else None
    if check is not None and check["passes_from"]:
        values = ", ".join(repr(v) for v in check["values"].values())
        cause += (f"; the first release after {release.version} that lets {values} pass: {check['passes_from']} "
                  f"({check['passes_how']})")
    site = event.site.location if event.site is not None else None
    if site is None and event.traceback is not None and kind != UNRELATED:
        inner = event.traceback.innermost(release.engine)
        site = f"{inner[1]}:{inner[0].line}" if inner else None
    elif kind == UNRELATED and event.traceback is not None and event.traceback.frames and site is None:
        site = None
    access = cast("AccessFinding | None", event.access)
    if access is not None and kind == ERROR and release.later is not None and release.tree_of is not None:
        from compat.explain.python_errors import first_working

        works = first_working(access, list(release.later()), release.tree_of)
        if works is not None:
            cause += f"; the first release after {release.version} that no longer makes this access: {works[0]} ({works[1]})"
    change = _change(event, release) if kind == ERROR else []
    if change and cause_id is None:
        cause += "; what selects this path: " + "; ".join(lever.describe() for lever in change)
    more = event.traceback.more[:MESSAGE_LINES] if event.traceback is not None and kind != UNRELATED else []
    return {"kind": kind, "site": site, "message": "\n".join([event.text, *more]), "cause": cause, "fix": fix.to_json() if fix is not None else None,
            "cause_id": cause_id,
            "exception": event.exception, "function": event.site.function if event.site else None,
            "template": event.site.template if event.site else None, "located_by": event.located_by,
            "also_at": [s.location for s in event.alternatives], "line": event.line, "count": event.count,
            "process": event.process or None, "traceback": event.traceback is not None,
            "traceback_cut": event.traceback.cut if event.traceback is not None and event.traceback.cut else None,
            "header": event.traceback.header if event.traceback is not None and event.traceback.header else None,
            "during": _context(event),
            "match": event.match.to_json() if event.match is not None else None,  # type: ignore[attr-defined]
            "also_fits": [n.to_json() for n in event.nearby], "check": check,
            "could_be": [_candidate(site) for site in event.candidates] + _could_be(event),
            "access": cast("AccessFinding", event.access).to_json() if event.access is not None else None,
            "raised_by_user": _user_line(event), "change": [lever.to_json() for lever in change]}


def _change(event: Event, release: Release) -> list[Lever]:
    """What the user can change to keep the engine off this path: the levers of the site's guard (or of the `if`s
    around an access, and the object it reads)."""
    site, tree = event.site, release.tree
    if site is None or tree is None:
        return []
    tests: list[tuple[str, bool]] = []
    line, receiver = site.line, None
    if site.guard:
        tests.append((site.guard["test"], bool(site.guard["raises_when"])))
        line = int(site.guard.get("line") or site.line)
    access = cast("AccessFinding | None", event.access)
    if access is not None:
        tests.extend(access.guards)
        name = access.problem.name
        found = re.search(r"([\w.]+)\." + re.escape(name) + r"\b", access.code or "")
        receiver = found.group(1) if found else None
    if not tests and receiver is None:
        return []
    from compat.explain.levers import levers

    return levers(tree, _vocabulary(release.report), site.file, line, tests, receiver)


_VOCABULARIES: IdentityMemo[dict, Vocabulary] = IdentityMemo(keep=8)  # a report's vocabulary, while it is held


def _vocabulary(report: dict) -> Vocabulary:
    from compat.explain.levers import Vocabulary

    return _VOCABULARIES.get(report, Vocabulary.of)


def _could_be(event: Event) -> list[dict[str, Any]]:
    """The lines of the release that make the access an error names, when the text does not say which."""
    access = cast("AccessFinding | None", event.access)
    if access is None:
        return []
    return [{"site": a.location, "function": a.function, "checks": f"`{code}`" if code else None}
            for a, code in access.candidates]


def _user_line(event: Event) -> dict[str, Any] | None:
    frame = event.user_frame
    if frame is None:
        return None
    return {"path": frame.path, "line": frame.line, "function": frame.function, "code": frame.code}


def _context(event: Event) -> str | None:
    """The exception that was being handled when this one was raised (a chained traceback's first part)."""
    context = event.traceback.context if event.traceback is not None else None
    if context is None:
        return None
    return f"{context.exception}: {context.message}" if context.message else str(context.exception)
