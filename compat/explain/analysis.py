"""One pass over the user's text against one release: what was raised or logged where, and why.

`analyse(lines, release)` reads the lines once (a traceback reader and the site index side by side) and
returns `Evidence`: the errors (a traceback's exception, or an error line matched to a raise site), the
warnings from logger calls on the speculative-decoding paths, the acceptance series of metrics lines, and
what the log says about the run (the architectures vLLM resolved, the version it printed). causes.py turns
the evidence into findings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from compat import engines
from compat.explain.flattened import unflatten
from compat.explain.metrics import Series, is_metrics_site, read_interval
from compat.explain.pydantic_asserts import bare_assert_candidates
from compat.explain.sites import Site, SiteIndex
from compat.explain.logline import LogLine, read_all
from compat.explain.text import Line
from compat.explain.titles import message_of
from compat.explain.tracebacks import Frame, Readers, Traceback, exception_line, raising_frame

WARNING_LEVELS = ("warning", "error", "exception", "critical", "fatal")
SPEC_WORDS = ("specul", "eagle", "draft", "aux_hidden", "aux hidden", "spec_decode", "spec decode")
# A text match without an exception name or a traceback frame to confirm it must be at least this specific.
MIN_LITERAL_ALONE = 16
OUT_OF_MEMORY = re.compile(r"out of memory|OutOfMemoryError|MemoryError|Cannot allocate memory|not enough memory", re.I)
# The engine's compiled kernels did not load (vLLM logs it and goes on; the failure shows up later, far from here).
KERNELS_NOT_LOADED = re.compile(r"Failed to import from (?:vllm|sgl_kernel)\b[\w.]*|_C\.abi3\.so: undefined symbol")
MAX_UNMATCHED = 200  # lines kept for the nearest-template search (a paste's lines; a log's error lines)
SHORT_INPUT = 40  # a text of at most this many lines is a paste: each of its lines may be a fragment


@dataclass
class Event:
    """An error or warning seen in the text."""

    line: int
    text: str  # the line as seen (the engine's message)
    exception: str | None
    site: Site | None  # the raise site or logger call, when one fits
    located_by: str  # "traceback" | "log prefix" | "message"
    alternatives: list[Site] = field(default_factory=list)  # other sites the same text fits
    traceback: Traceback | None = None
    seen_on: set[int] = field(default_factory=set)  # the lines it was seen on (a traceback's ends on its error line)
    process: str = ""  # the process that wrote it, as the lines' prefixes say ("EngineCore_DP0 pid=42", "TP0")
    match: object = None  # how the text fits the site when it is not the whole message (a nearest.Near)
    nearby: list = field(default_factory=list)  # other templates the text also fits (nearest.Near), for a paste
    candidates: list[Site] = field(default_factory=list)  # sites it may be, none of them said to be it (pydantic_asserts)
    user_frame: Frame | None = None  # the frame of the user's own code that raised it (tracebacks.raising_frame)
    access: object = None  # what Python raised at an access or call of the engine's (python_errors.Access)

    @property
    def count(self) -> int:
        return max(1, len(self.seen_on | {self.line}))


@dataclass
class Evidence:
    engine: str
    events: list[Event] = field(default_factory=list)
    series: Series | None = None
    architectures: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)  # versions the text names
    tracebacks: list[Traceback] = field(default_factory=list)
    lines: int = 0
    frame_checks: list[tuple[str, int, str, bool | None]] = field(default_factory=list)  # file, line, code, fits
    unmatched: list[tuple[LogLine, bool]] = field(default_factory=list)  # lines no site matched (line, error-like)
    names_release: re.Pattern[str] | None = None  # how the engine's log names its release (its unit's VERSION_IN_LOG)

    def __post_init__(self) -> None:
        if self.names_release is None:
            self.names_release = engines.get(self.engine).version_in_log_pattern


def analyse(lines: Iterable[Line], engine: str, index: SiteIndex, source_line=None, elsewhere=None) -> Evidence:
    """`source_line(relpath, n)` gives a release's line n of a file (to check a traceback's shown code);
    `elsewhere` (an Elsewhere) reads the sites of files the index does not cover."""
    evidence = Evidence(engine)
    readers = Readers()
    seen: dict[tuple, Event] = {}
    for given in lines:
        evidence.lines = given.number
        for raw in unflatten(given):  # one line, or the lines a traceback flattened onto it was
            for line in read_all(raw):  # one line, or the lines a JSON record carries
                finished = readers.feed(line)
                if finished is not None:
                    _traceback(evidence, finished, index, seen, source_line, elsewhere)
                if not readers.took_line:
                    _line(evidence, line, index, seen)
    for finished in readers.close():
        _traceback(evidence, finished, index, seen, source_line, elsewhere)
    evidence.events.sort(key=lambda e: e.line)
    return evidence


def _line(evidence: Evidence, line: LogLine, index: SiteIndex, seen: dict) -> None:
    text = line.text
    if not text.strip() or text.lstrip().startswith('File "'):
        return
    assert evidence.names_release is not None
    version = evidence.names_release.search(text)
    if version and version.group(1) not in evidence.versions:
        evidence.versions.append(version.group(1))
    matches = index.match(text)
    if not matches:
        exc = exception_line(text)
        if OUT_OF_MEMORY.search(text) or KERNELS_NOT_LOADED.search(text):  # said so, as unrelated, wherever it comes from
            record_event(evidence, seen, Event(line.number, text.strip(), exc[0] if exc else None, None, "message",
                                          process=line.process))
        else:
            error_like = exc is not None or line.level in ("ERROR", "CRITICAL", "FATAL")
            if (error_like or line.number <= SHORT_INPUT) and len(evidence.unmatched) < MAX_UNMATCHED:
                evidence.unmatched.append((line, error_like))
        return
    place = line.place
    if place is not None:
        exact = index.logged_at(place[0].rpartition("/")[2], place[1])
        if exact:
            hit = next(((s, m) for s, m in matches if s in exact), None)
            if hit is not None:
                matches = [hit]
    metrics = next((pair for pair in matches if is_metrics_site(pair[0], evidence.engine)), None)
    site, _ = metrics or matches[0]  # a decode log line matches its whole-line call and its metrics piece
    if is_metrics_site(site, evidence.engine):
        interval = read_interval(site, text, line.number)
        if interval is not None:
            if evidence.series is None:
                evidence.series = Series(site, evidence.engine)
            evidence.series.add(interval)
        return
    if site.kind == "log":
        if site.template.startswith("Resolved architecture") and site.capturing is not None:
            found = site.capturing.search(text)
            name = found.group(1).strip() if found else ""
            if name and name not in evidence.architectures:
                evidence.architectures.append(name)
        if site.level in WARNING_LEVELS and _about_spec(site):
            record_event(evidence, seen, Event(line.number, text.strip(), None, site, "log prefix" if place else "message",
                                          [s for s, _ in matches[1:] if s.kind == "log"], process=line.process))
        return
    exception = message_of(text)[0]  # an exception line, or one named after the user's words (a title's lead)
    named = exception is not None and exception.rpartition(".")[2] == site.exception
    if not named and site.literal_length < MIN_LITERAL_ALONE:
        return
    same = [s for s, _ in matches[1:] if s.kind != "log" and s.template == site.template]
    record_event(evidence, seen, Event(line.number, text.strip(), exception or site.exception, site, "message", same,
                                  process=line.process))


def _about_spec(site: Site) -> bool:
    text = f"{site.template} {site.file}".lower()
    return any(word in text for word in SPEC_WORDS)


def _traceback(evidence: Evidence, tb: Traceback, index: SiteIndex, seen: dict, source_line, elsewhere=None) -> None:
    package = evidence.engine
    if tb.chained:
        _chain(evidence, tb, seen, package)
    evidence.tracebacks.append(tb)
    if source_line is not None:
        for frame, relpath in tb.engine_frames(package):
            shown = source_line(relpath, frame.line)
            fits = None if frame.code is None or shown is None else shown.strip() == frame.code
            evidence.frame_checks.append((relpath, frame.line, frame.code or "", fits))
    has_file = (lambda relpath: source_line(relpath, 1) is not None) if source_line is not None else None
    unit = engines.get(package)
    owner = raising_frame(tb, package, has_file, f"{unit.import_name}/{unit.source_prefix}{unit.import_name}/")
    if owner is not None and owner[1] == "user":  # the user's code raised it: no engine site is pinned on it
        site, located, user_frame = None, "traceback", owner[0]
    else:
        site, located = _site_of(tb, index, package, source_line, elsewhere)
        user_frame = None
    candidates = bare_assert_candidates(tb, index) if site is None and user_frame is None else []
    if len(candidates) == 1:  # the model's only assert without a message: the one pydantic reports
        site, located, candidates = candidates[0], "pydantic message", []
    text = f"{tb.exception}: {tb.message}" if tb.message else str(tb.exception or "a traceback cut short")
    record_event(evidence, seen, Event(tb.error_line or tb.first_line, text, tb.exception, site, located, traceback=tb,
                                  process=tb.process, candidates=candidates, user_frame=user_frame))


def _chain(evidence: Evidence, tb: Traceback, seen: dict, package: str) -> None:
    """A traceback raised while handling the one before it (or from it): the earlier one is its context. When that
    one never reached the engine's code (a JSONDecodeError inside transformers, turned into an OSError the engine's
    caller sees), it is not a finding of its own but said with the later one."""
    earlier = next((t for t in reversed(evidence.tracebacks) if t.process == tb.process), None)
    if earlier is None or earlier.last_line > tb.first_line:
        return
    tb.context = earlier
    if not earlier.engine_frames(package):
        for key, event in list(seen.items()):
            if event.traceback is earlier:
                del seen[key]
                evidence.events.remove(event)


def _site_of(tb: Traceback, index: SiteIndex, package: str, source_line=None, elsewhere=None) -> tuple[Site | None, str]:
    """The raise site of a traceback, and how it was found: the innermost engine frame's raise or assert (when the
    release has the code the frame shows there: read against another release, the line may hold other code); else
    the engine's raise that pydantic reports in its own words; else, for an exception the engine's own code raised
    (a re-raise, or a frame of another release), its message; else (None, "traceback"): the frames alone say where
    the engine was."""
    inner = tb.innermost(package)
    if inner is not None:
        frame, relpath = inner
        shown = source_line(relpath, frame.line) if source_line is not None and frame.code else None
        if shown is None or shown.strip() == frame.code:
            at = [s for s in index.at(relpath, frame.line) if s.kind != "log"]
            if not at and elsewhere is not None and not index.has_file(relpath) and tb.frames[-1] is frame:
                at = [s for s in elsewhere.at(relpath, frame.line) if s.kind != "log"]  # a raise off the probed paths
            if at:
                return at[0], "traceback"
    wrapped = _wrapped_site(tb, index, elsewhere)
    if wrapped is not None:
        return wrapped, "pydantic message"
    raised_by_engine = not tb.frames or tb.frames[-1].in_package(package) is not None
    if raised_by_engine and tb.message:
        named = (tb.exception or "").rpartition(".")[2]
        hits = [s for s, _ in index.match(tb.message) if s.kind != "log"
                and (s.exception == named or s.literal_length >= MIN_LITERAL_ALONE)]
        if hits:
            return hits[0], "message"
    return None, "traceback"


def _wrapped_site(tb: Traceback, index: SiteIndex, elsewhere=None) -> Site | None:
    """The engine's raise that pydantic reports in its own words: it runs a config's validators in compiled code
    (no frame of theirs is shown) and lists their messages after its own `ValidationError` line (`  Value error,
    Eagle3 is only supported for [...]`). Only pydantic's wrapper is read so (an error raised in torch is torch's,
    whatever an engine message it resembles), and only a specific match counts: the engine's template must carry
    enough literal text to name its raise alone."""
    if (tb.exception or "").rpartition(".")[2] != "ValidationError":
        return None
    for text in (tb.message, *tb.more):
        hits = [s for s, _ in index.match(text) if s.kind != "log" and s.literal_length >= MIN_LITERAL_ALONE]
        if hits:
            return hits[0]
    if elsewhere is not None:  # a raise outside the probed files (a config loader, the model registry)
        for text in tb.more:
            if text.startswith("Value error, "):
                found = elsewhere.raising(text[len("Value error, "):])
                if found is not None:
                    return found
    return None


def record_event(evidence: Evidence, seen: dict, event: Event) -> None:
    """One event per site (or per exception text without a site); a traceback's event replaces the message's."""
    key = ("site", event.site.location) if event.site is not None else ("text", event.text)
    earlier = seen.get(key)
    if earlier is None:
        seen[key] = event
        evidence.events.append(event)
        return
    earlier.seen_on.add(event.line)
    if event.traceback is not None and earlier.traceback is None:  # the traceback of the error line seen
        earlier.traceback, earlier.located_by = event.traceback, event.located_by
        earlier.exception = earlier.exception or event.exception
