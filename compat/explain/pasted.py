"""What people paste, read for what it is: a fragment of the engine's message names its site (said to be a
fragment); a message in other words gets the nearest sites, each with how well it matches, and is not presented as
a match. See nearest.py for how text and templates are compared.
"""

from __future__ import annotations

from compat.explain.analysis import SHORT_INPUT, Event, Evidence, record_event
from compat.explain.nearest import Near, WordIndex
from compat.explain.sites import SiteIndex
from compat.explain.tracebacks import exception_line

_WORDS: dict[int, WordIndex] = {}
MAX_LINES = 40  # distinct lines compared with every template


def word_index(index: SiteIndex) -> WordIndex:
    """The release's templates by their words (built on first need: most logs match exactly)."""
    found = _WORDS.get(id(index))
    if found is None:
        found = _WORDS[id(index)] = WordIndex(index.sites)
    return found


def read_pasted(evidence: Evidence, index: SiteIndex) -> list[dict]:
    """Fragments become events (in place); returns the nearest sites of the lines that match no template."""
    short = evidence.lines <= SHORT_INPUT
    if not short and any(e.site is not None and e.site.kind != "log" for e in evidence.events):
        return []  # a log whose errors were found: the nearest templates of its other lines would be noise
    lines = [(line, error_like) for line, error_like in evidence.unmatched if short or error_like]
    distinct: dict[str, tuple] = {}
    for line, error_like in lines:  # a message repeated (a log's retries, a log pasted twice) is compared once
        distinct.setdefault(line.text.strip(), (line, error_like))
    lines = list(distinct.values())[:MAX_LINES]
    if not lines and not (short and any(e.located_by == "message" for e in evidence.events)):
        return []
    words = word_index(index)
    if short:
        for event in evidence.events:
            if event.located_by == "message" and event.site is not None:
                event.nearby = [n for n in words.nearest(_message(event.text)) if n.how == "fragment"
                                and n.site.template != event.site.template]
    seen = {("site", e.site.location) if e.site is not None else ("text", e.text): e for e in evidence.events}
    nearest: list[dict] = []
    for line, _ in lines:
        message = _message(line.text)
        found = words.nearest(message)
        fragments = [n for n in found if n.how == "fragment"]
        fragments = [n for n in fragments if n.skipped == fragments[0].skipped]  # the best fitting (found is sorted)
        if len({n.site.template for n in fragments}) == 1:  # names one message: that is its site
            near = fragments[0]
            exc = exception_line(line.text)
            event = Event(line.number, line.text.strip(), exc[0] if exc else near.site.exception, near.site,
                          "message fragment", list(near.others), process=line.process, match=near)
            record_event(evidence, seen, event)
        elif found:
            nearest.append({"line": line.number, "text": line.text.strip(), "sites": [n.to_json() for n in found],
                            "ambiguous_fragment": len(fragments) > 1})
    evidence.events.sort(key=lambda e: e.line)
    return nearest


def _message(text: str) -> str:
    exc = exception_line(text)
    return exc[1] if exc is not None and exc[1] else text


__all__ = ["Near", "read_pasted", "word_index"]
