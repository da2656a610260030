"""Acceptance numbers from log lines: vLLM's `SpecDecoding metrics:` lines and SGLang's `accept len` lines (the
logger call each engine writes them with is its unit's LOG_ACCEPTANCE, compat/engines/<name>.py).

The line is recognised by the release's own logger call (an `error_sites` log site) and its numbers are
read off the call's template: the literal text before each hole is that value's label ("Accepted: " ...
" tokens"), so a release that reorders or renames the fields is still read by its own words. Each line
is one logging interval; the intervals are summed (drafts weight the per-position rates) and judged by
compat/acceptance.py, the rule `verify --server` uses.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from compat import engines
from compat.acceptance import AcceptanceSample, Judgement, judge
from compat.explain.sites import Site

MAX_COUNT = 2**53  # a counter past this is not a count of tokens (and its sums would leave float range)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _mark(site: Site, engine: str) -> str | None:
    """The words of the engine's acceptance line (its unit's LOG_ACCEPTANCE) in the site's template, or None."""
    pattern = engines.get(engine).log_acceptance
    found = re.search(pattern, site.template) if pattern and site.kind == "log" else None
    return found.group(0) if found else None


def is_metrics_site(site: Site, engine: str) -> bool:
    """The logger call that writes the engine's acceptance numbers."""
    return _mark(site, engine) is not None


@dataclass(frozen=True)
class Interval:
    line: int
    mean_accepted_length: float | None
    accepted: int | None
    drafted: int | None
    per_position: tuple[float, ...]
    rate: float | None  # accepted / drafted, 0..1
    last_line: int | None = None  # a merged interval (a long log): the last log line it sums
    merged: int = 1  # how many log lines it sums

    def to_json(self) -> dict:
        out = {"line": self.line, "mean_accepted_length": self.mean_accepted_length, "accepted_tokens": self.accepted,
               "draft_tokens": self.drafted, "per_position": list(self.per_position),
               "rate": None if self.rate is None else round(self.rate, 4)}
        return out if self.merged == 1 else {**out, "last_line": self.last_line, "log_lines": self.merged}


def merge(intervals: list[Interval]) -> Interval:
    """Consecutive intervals as one: counts summed, per-position rates weighted by drafts (as Series.sample does)."""
    if len(intervals) == 1:
        return intervals[0]
    counted = [i for i in intervals if i.drafted is not None and i.accepted is not None]
    k = max((len(i.per_position) for i in intervals), default=0)
    per: tuple[float, ...] = ()
    if counted and k:
        weights = [(i, i.drafted // k) for i in counted if i.drafted is not None]
        per = tuple(sum(i.per_position[p] * w for i, w in weights if len(i.per_position) > p)
                    / (sum(w for i, w in weights if len(i.per_position) > p) or 1) for p in range(k))
    accepted = sum(i.accepted for i in counted if i.accepted is not None) if counted else None
    drafted = sum(i.drafted for i in counted if i.drafted is not None) if counted else None
    lengths = [i.mean_accepted_length for i in intervals if i.mean_accepted_length is not None]
    rates = [i.rate for i in intervals if i.rate is not None]
    rate = accepted / drafted if accepted is not None and drafted else (sum(rates) / len(rates) if rates else None)
    return Interval(intervals[0].line, sum(lengths) / len(lengths) if lengths else None, accepted, drafted, per, rate,
                    intervals[-1].last_line or intervals[-1].line, sum(i.merged for i in intervals))


def read_interval(site: Site, text: str, line: int) -> Interval | None:
    """The numbers of one metrics line, by the labels of the site's template; None when it does not parse."""
    capturing = site.capturing
    hit = capturing.search(text) if capturing is not None else None
    if hit is None:
        return None
    values: dict[str, str] = {}
    chunks = site.template.split("{}")
    for i, value in enumerate(hit.groups()):
        key = _role(chunks[i].lower()) if i < len(chunks) else None
        if key == "rate" and chunks[i + 1:i + 2] and chunks[i + 1].startswith("%"):
            key = "rate_percent"
        if key and key not in values:
            values[key] = value
    per = tuple(float(v) for v in _NUMBER.findall(values.get("per_position", "")))
    per = per if all(math.isfinite(p) for p in per) else ()  # a rate of 1e5000 digits says nothing per position
    rate = _float(values.get("rate_percent"))
    rate = rate / 100 if rate is not None else _float(values.get("rate"))
    return Interval(line, _float(values.get("length")), _int(values.get("accepted")), _int(values.get("drafted")),
                    per, rate)


def _role(label: str) -> str | None:
    label = label.rsplit(",", 1)[-1].strip()
    if "per-position" in label or "per position" in label:
        return "per_position"
    if "length" in label or "accept len" in label:
        return "length"
    if "throughput" in label:
        return None
    if label.startswith("accepted") or label.endswith("accepted:"):
        return "accepted"
    if label.startswith("drafted") or label.endswith("drafted:"):
        return "drafted"
    if "acceptance rate" in label or "accept rate" in label:
        return "rate"
    return None


def _float(value: str | None) -> float | None:
    """A finite number, or None: a log's NaN, inf or 1e999 is not a count (the hostile campaign's lying counters)."""
    try:
        number = float(value.replace(",", "")) if value is not None else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) else None


def _int(value: str | None) -> int | None:
    """A token count, or None: a negative one or one past MAX_COUNT is a lying counter, not a count."""
    number = _float(value)
    return int(number) if number is not None and 0 <= number <= MAX_COUNT else None


MAX_KEPT = 512  # intervals kept for a trend: past twice this, neighbours are merged in pairs (bounded memory)


@dataclass
class Series:
    """The intervals of one log, in order: every line up to 2 * MAX_KEPT, then merged runs of `span` lines (a log of
    millions of metrics lines is read in bounded memory; the totals are the same)."""

    site: Site
    engine: str
    count: int = 0  # metrics lines read
    span: int = 1  # log lines per kept interval
    _kept: list[Interval] = field(default_factory=list)
    _pending: list[Interval] = field(default_factory=list)

    def add(self, interval: Interval) -> None:
        self.count += 1
        self._pending.append(interval)
        if len(self._pending) < self.span:
            return
        self._kept.append(merge(self._pending))
        self._pending = []
        if len(self._kept) >= 2 * MAX_KEPT:
            self._kept = [merge(self._kept[i:i + 2]) for i in range(0, len(self._kept), 2)]
            self.span *= 2

    @property
    def intervals(self) -> list[Interval]:
        return self._kept + ([merge(self._pending)] if self._pending else [])

    def sample(self, intervals: list[Interval] | None = None) -> AcceptanceSample:
        intervals = self.intervals if intervals is None else intervals
        counted = [(i, i.drafted, i.accepted) for i in intervals if i.drafted is not None and i.accepted is not None]
        k = max((len(i.per_position) for i in intervals), default=0) or None
        if counted and k:
            drafted = sum(d for _, d, _ in counted)
            accepted = sum(a for _, _, a in counted)
            drafts = drafted // k
            per = tuple(sum(i.per_position[p] * (d // k) for i, d, _ in counted if len(i.per_position) > p) / drafts
                        if drafts else 0.0 for p in range(k))
            return AcceptanceSample(source=self._source(intervals), drafts=drafts, draft_tokens=drafted,
                                    accepted_tokens=accepted, per_position=per,
                                    mean_accepted_length=1 + accepted / drafts if drafts else None,
                                    rate=accepted / drafted if drafted else None, num_speculative_tokens=k)
        lengths = [i.mean_accepted_length for i in intervals if i.mean_accepted_length is not None]
        return AcceptanceSample(source=self._source(intervals),
                                mean_accepted_length=sum(lengths) / len(lengths) if lengths else None)

    def _source(self, intervals: list[Interval]) -> str:
        what = _mark(self.site, self.engine) or self.site.template  # the logger call it was read by
        if not intervals:
            return what
        last = intervals[-1].last_line or intervals[-1].line
        return f"{sum(i.merged for i in intervals)} `{what}` log lines (lines {intervals[0].line}-{last})"

    def judgement(self) -> Judgement:
        return judge(self.sample())

    def over_time(self) -> list[dict]:
        """Each interval's position-0 acceptance (or mean accepted length) and verdict, for a trend."""
        out = []
        for interval in self.intervals:
            verdict = judge(self.sample([interval])).verdict
            out.append({**interval.to_json(), "verdict": verdict})
        return out
