"""An error as an issue title or a one-line report carries it: behind words of the user's (`[Bug]: Qwen3 EAGLE3 fails:
ValueError: ...`, `SGLang run error: ValueError: ...`), and often cut short where the title field or the user
stopped (`... are not supported for now. Supp`).

    message_of(text) -> (exception | None, message)   the message behind the lead
    cut_sites(message, sites) -> [Cut]                 the templates the message is the start of, best first

A message cut short is matched against the release's templates from its start: each literal part in order, a hole
taking whatever text the value had, the message ending anywhere (in a value or inside a literal). Only a specific
match counts: at least MIN_LITERAL characters of the template's literal text, and most of the message said by it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from compat.explain.sites import Site
from compat.explain.tracebacks import exception_line

# an exception named inside a line, after the user's words: `... error: ValueError: msg`, `[Bug] KeyError: 'x'`
_INSIDE = re.compile(r"(?:^|(?<=[\s:(\[\]`'\"]))((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure))"
                     r"(?::\s*(.*)|\s*$)")
_TAG = re.compile(r"^\s*(?:\[[^\]]{1,40}\]\s*:?\s*)+")  # an issue template's `[Bug]: `, `[Bug] [SGLang] `
MIN_LITERAL = 16  # literal characters of the template the cut message must hold
MIN_SHARE = 0.5  # of the message's characters said by the template's literal text
MAX_CUTS = 5
MAX_MESSAGE = 2000  # characters of a line compared from its start (a title is at most 256)
MIN_HEAD = 12  # characters of a literal the message holds before the user's own words go on


@dataclass(frozen=True)
class Cut:
    site: Site
    literal: int  # characters of the template's literal text the message holds
    whole: bool  # the message holds the template to its end (not cut short)

    def describe(self) -> str:
        return (f"the text is this message cut short ({self.literal} characters of its text, then the text ends)"
                if not self.whole else "the text is this message")

    def to_json(self) -> dict:
        """As a nearest.Near's (a finding's `match`)."""
        return {"site": self.site.location, "template": self.site.template, "kind": self.site.kind,
                "exception": self.site.exception, "function": self.site.function, "score": 1.0,
                "how": "whole" if self.whole else "cut", "literal_characters": self.literal, "says": self.describe(),
                "also_at": []}


def message_of(text: str) -> tuple[str | None, str]:
    """(exception, message) of a line: an exception line, or one named after the user's words; else (None, the line
    without an issue template's tag)."""
    found = exception_line(text)
    if found is not None:
        return found
    inside = _INSIDE.search(text)
    if inside is not None:
        return inside.group(1), (inside.group(2) or "").strip()
    return None, _TAG.sub("", text).strip()


def cut_sites(message: str, sites: list[Site]) -> list[Cut]:
    """The sites whose template the message begins (cut short anywhere), most literal text first."""
    message = " ".join(message.split())
    if not MIN_LITERAL <= len(message) <= MAX_MESSAGE:
        return []
    found = []
    for site in sites:
        if site.kind == "log" or not site.template:
            continue
        fit = _fit(" ".join(site.template.split()), message)
        if fit is not None and fit[0] >= MIN_LITERAL and ("{}" in site.template or fit[0] >= MIN_SHARE * len(message)):
            found.append(Cut(site, fit[0], fit[1]))
    found.sort(key=lambda c: (-c.literal, c.site.location))
    best = [c for c in found if c.literal == found[0].literal] if found else []
    return best[:MAX_CUTS]


def _fit(template: str, message: str) -> tuple[int, bool] | None:
    """(literal characters matched, whole) when the message is the template from its start, cut anywhere; else None."""
    parts = template.split("{}")
    first = parts[0]
    if first:
        if not message.startswith(first):
            return (len(message), False) if first.startswith(message) else None
        pos, matched = len(first), len(first)
    else:
        pos, matched = 0, 0
    for part in parts[1:]:
        if not part.strip():
            continue
        at = message.find(part, pos)
        if at >= 0:
            pos, matched = at + len(part), matched + len(part)
            continue
        rest = message[pos:]
        for size in range(min(len(part), len(rest)), 0, -1):  # the message ends inside this literal
            if part.startswith(rest[-size:]) and (size >= 4 or size == len(rest)):
                return matched + size, False
        head = _longest_head(part, message, pos)  # or it stops inside it, the user's words after (a title's)
        if head >= MIN_HEAD:
            return matched + head, False
        # it ends inside a value: enough when the message held a literal after a value, or a long first one
        return (matched, False) if matched > len(first) or len(first) >= 2 * MIN_LITERAL else None
    return matched, True


def _longest_head(part: str, message: str, pos: int) -> int:
    """The longest start of `part` (whole words) found in the message after `pos`: where the template was cut and
    the user's words continue."""
    ends = [i for i, ch in enumerate(part) if ch == " "] + [len(part)]
    for end in reversed(ends):
        if end >= MIN_HEAD and part[:end] in message[pos:]:
            return end
    return 0
