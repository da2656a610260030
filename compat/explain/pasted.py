"""What people paste, read for what it is: a fragment of the engine's message names its site (said to be a
fragment); a message in other words gets the nearest sites, each with how well it matches, and is not presented as
a match. See nearest.py for how text and templates are compared.
"""

from __future__ import annotations

from compat.core.identity_memo import IdentityMemo
from compat.explain.analysis import SHORT_INPUT, Event, Evidence, record_event
from compat.explain.nearest import Near, WordIndex
from compat.explain.sites import SiteIndex
from compat.explain.titles import cut_sites, message_of
from compat.explain.tracebacks import exception_line

_WORDS: IdentityMemo[SiteIndex, WordIndex] = IdentityMemo(keep=16)  # an index's words, while it is held
MAX_LINES = 40  # distinct lines compared with every template
MIN_ELSEWHERE = 24  # characters of a message looked for in the release's other files


def word_index(index: SiteIndex) -> WordIndex:
    """The release's templates by their words (built on first need: most logs match exactly)."""
    return _WORDS.get(index, lambda held: WordIndex(held.sites))


def read_pasted(evidence: Evidence, index: SiteIndex, elsewhere=None) -> list[dict]:
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
        exc_named, message = message_of(line.text)
        found = words.nearest(message or line.text)
        fragments = [n for n in found if n.how == "fragment"]
        fragments = [n for n in fragments if n.skipped == fragments[0].skipped]  # the best fitting (found is sorted)
        cuts = cut_sites(message, index.sites) if short and len({n.site.template for n in fragments}) != 1 else []
        if cuts and len({c.site.template for c in cuts}) == 1:  # the start of one message, cut short: its site
            cut = cuts[0]
            record_event(evidence, seen, Event(line.number, line.text.strip(), exc_named or cut.site.exception, cut.site,
                                               "message" if cut.whole else "message cut short",
                                               [c.site for c in cuts[1:]], process=line.process, match=cut))
            continue
        far = elsewhere.raising(message) if (elsewhere is not None and short and exc_named and not fragments
                                             and len(message) >= MIN_ELSEWHERE) else None
        if far is not None:  # the whole message of a raise in a file off the speculative-decoding paths
            record_event(evidence, seen, Event(line.number, line.text.strip(), exc_named, far, "message",
                                               process=line.process))
            continue
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
    return message_of(text)[1] or text


def words_searched(evidence: Evidence, limit: int = 24) -> list[str]:
    """The words of a paste's lines that matched nothing, as they were compared with the release's templates."""
    from compat.explain.nearest import words

    if evidence.lines > SHORT_INPUT:
        return []
    found: dict[str, None] = {}
    for line, _ in evidence.unmatched:
        for word in words(_message(line.text)):
            if len(word) > 2:
                found.setdefault(word, None)
    return list(found)[:limit]


__all__ = ["Near", "read_pasted", "word_index", "words_searched"]
