"""Text that is not the engine's whole message: a fragment, the message in the user's own words, the message without
its values. Matched against the release's raise and logger templates by their literal words.

    nearest(text, index) -> [Near]   the closest sites, best first, each with how well it matches

Two kinds of nearness, never presented as more than they are:
- a fragment: the text's words are a run of one template's literal words, in order (`Model does not support EAGLE3
  interface` of `Model does not support EAGLE3 interface but aux_hidden_state_outputs was requested`), a few of the
  template's words perhaps skipped (the fewer, the better the fit: a message it fits whole beats one it skips words
  of); specific enough (MIN_FRAGMENT_WORDS words, MIN_FRAGMENT_CHARS characters) it names that template's sites;
- shared words: how much of what the text says is in the template, and how much of the template it says, each word
  weighted by how rare it is among the release's templates (a word every message has says little). A score, shown
  as such; explain lists these as the nearest sites, not as the site.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import lru_cache

from compat.explain.sites import Site

_WORD = re.compile(r"[a-z0-9_]+(?:'[a-z]+)?")
_CONTRACTIONS = {"doesn't": "does not", "don't": "do not", "isn't": "is not", "aren't": "are not", "can't": "can not",
                 "cannot": "can not", "won't": "will not", "wasn't": "was not", "couldn't": "could not",
                 "didn't": "did not", "hasn't": "has not", "haven't": "have not", "it's": "it is"}
MIN_FRAGMENT_WORDS = 3
MIN_FRAGMENT_CHARS = 16
MIN_SCORE = 0.45  # below this a site shares too little with the text to be named at all
MIN_FRAGMENT_PRECISION = 0.75  # a fragment: the template's words are (by weight) this much of the text
MAX_WORDS = 60  # words of the text compared (a pasted paragraph's start says what it is about)
LIMIT = 3
MAX_TIED = 10


def words(text: str) -> list[str]:
    """The text's words, lower case, contractions spelled out, each reduced to its stem (`supports`, `supported`:
    `support`), so that the user's own wording meets the engine's."""
    out: list[str] = []
    for word in _WORD.findall(text.lower()):
        out.extend(_stem(w) for w in _CONTRACTIONS.get(word, word).split())
    return out


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    if len(word) <= 4 or not word.isalpha():
        return word
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=16384)
def literal_words(template: str) -> tuple[str, ...]:
    """The template's literal words in order, its holes left out (a message is in many releases: read once)."""
    return tuple(words(template.replace("{}", " ")))


@dataclass(frozen=True)
class Near:
    site: Site
    score: float  # 0..1
    how: str  # "fragment" | "words"
    shared: tuple[str, ...]  # the text's words the template has
    given: int  # the text's words compared
    others: tuple[Site, ...] = ()  # the other sites that raise or log the same template
    skipped: int = 0  # a fragment: the message's words it leaves out between its own

    def describe(self) -> str:
        if self.how == "fragment":
            left = f", {self.skipped} of the message's words left out" if self.skipped else ""
            return f"the text is a fragment of this message ({len(self.shared)} words in order{left})"
        return f"{len(self.shared)} of the text's {self.given} words are in this message (score {self.score:.2f})"

    def to_json(self) -> dict:
        return {"site": self.site.location, "template": self.site.template, "kind": self.site.kind,
                "exception": self.site.exception, "function": self.site.function, "score": round(self.score, 3),
                "how": self.how, "shared_words": list(self.shared), "words_given": self.given,
                "words_left_out": self.skipped, "says": self.describe(), "also_at": [o.location for o in self.others]}


class WordIndex:
    """The release's templates by their words, with each word's weight (rare words weigh more)."""

    def __init__(self, sites: list[Site]) -> None:
        self.sites = [s for s in sites if s.template.strip("{} ")]
        self._runs = [literal_words(s.template) for s in self.sites]
        self._sets = [set(run) for run in self._runs]
        frequency = Counter(w for words_of in self._sets for w in words_of)
        total = max(1, len(self.sites))
        self._weight = {w: math.log(1 + total / n) for w, n in frequency.items()}
        # a word no template has is likely a value the text holds (a model type, a path): weighed as a common word
        self._unknown = sorted(self._weight.values())[len(self._weight) // 4] if self._weight else 1.0
        self._totals = [sum(self._weight[w] for w in words_of) for words_of in self._sets]
        self._by_word: dict[str, list[int]] = defaultdict(list)
        for i, words_of in enumerate(self._sets):
            for w in words_of:
                self._by_word[w].append(i)

    def weight(self, word: str) -> float:
        return self._weight.get(word, self._unknown)

    def nearest(self, text: str, limit: int = LIMIT) -> list[Near]:
        given = list(dict.fromkeys(words(text)))[:MAX_WORDS]
        if not given:
            return []
        candidates: set[int] = set()
        for w in given:
            candidates.update(self._by_word.get(w, ()))
        total_given = sum(self.weight(w) for w in given)
        found: list[Near] = []
        sequence = words(text)
        for i in candidates:
            site, have = self.sites[i], self._sets[i]
            shared = tuple(w for w in given if w in have)
            matched = sum(self.weight(w) for w in shared)
            precision = matched / total_given
            coverage = matched / max(1e-9, self._totals[i])
            score = 1.25 * precision * coverage / (0.25 * precision + coverage) if matched else 0.0
            skips = _fragment_skips(sequence, self._runs[i], have) if precision >= MIN_FRAGMENT_PRECISION else None
            if skips is not None:
                found.append(Near(site, max(score, precision), "fragment", shared, len(given), skipped=skips))
            elif score >= MIN_SCORE:
                found.append(Near(site, score, "words", shared, len(given)))
        found.sort(key=lambda n: (n.how != "fragment", n.skipped, -n.score, n.site.location))
        grouped = _one_per_template(found)
        # messages the text fits equally well are all named (an ambiguous fragment), then the nearest others; a
        # fragment that skips none of a message's words fits it better than one that skips some of another's
        tied = [n for n in grouped if n.how == "fragment" and n.skipped == grouped[0].skipped
                and n.score >= grouped[0].score - 1e-9][:MAX_TIED]
        return tied + [n for n in grouped if n not in tied][:max(0, limit - len(tied))]


def _fragment_skips(sequence: list[str], run: tuple[str, ...], have: set[str]) -> int | None:
    """How many of the template's words the text skips where it is a fragment of it (None: it is not one). The text's
    words that are the template's follow its literal words in order (the holes' values the text may hold aside), a
    template word skipped here and there (one glued to a value that was left out: `{}to a parameter`), specific
    enough, and at least half of the text. The fewest skips over every place the fragment can start."""
    kept = [w for w in sequence if w in have]
    if len(kept) < MIN_FRAGMENT_WORDS or len(" ".join(kept)) < MIN_FRAGMENT_CHARS or 2 * len(kept) < len(sequence):
        return None
    allowed = len(kept) // 4  # template words the text may skip
    best: int | None = None
    for start, word in enumerate(run):
        if word != kept[0]:
            continue
        position, skipped = start + 1, 0
        for wanted in kept[1:]:
            while position < len(run) and run[position] != wanted and skipped <= allowed:
                position, skipped = position + 1, skipped + 1
            if position >= len(run) or skipped > allowed:
                break
            position += 1
        else:
            best = skipped if best is None else min(best, skipped)
            if not best:
                return 0
    return best


def _one_per_template(found: list[Near]) -> list[Near]:
    """The same message raised at several places is one entry (its first site; the others with it)."""
    by_template: dict[str, list[Near]] = {}
    for near in found:
        by_template.setdefault(near.site.template, []).append(near)
    return [Near(group[0].site, group[0].score, group[0].how, group[0].shared, group[0].given,
                 tuple(n.site for n in group[1:]), group[0].skipped) for group in by_template.values()]
