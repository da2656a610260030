"""A release's error sites (the `error_sites` probe), indexed so that a whole log is matched in a pass.

Each site with a pattern is filed under its rarest word (the word fewest sites share); a line is split into
words and only the sites filed under them are tried: a few regex searches per line whatever the number of
sites. A vLLM log line's `[file.py:123]` names its logger call exactly, and a traceback frame names a raise
site by file and line; both are looked up directly.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cached_property

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
MAX_MATCHED = 4096  # characters of a line matched against the patterns (a message starts early; dumps are long)
_HOLE = re.compile(r"\.\*\?")
# A hole in a probe's pattern: `.*?` or the number pattern (compat/probes/_error_sites.py).
_NUMBER = r"-?(?:\d[\d,]*(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf)"


@dataclass(frozen=True)
class Site:
    kind: str  # raise | assert | log
    exception: str | None
    level: str | None
    template: str
    pattern: str | None
    function: str | None
    location: str  # file:line in the release
    end_line: int | None
    words: tuple[str, ...] = ()  # the pattern's words: all must be in a line before its regex runs
    guard: dict | None = field(default=None, compare=False)  # what the raise checks (probes/_guards.py)
    holes: tuple[str, ...] | None = field(default=None, compare=False)  # each hole's expression, in order

    @property
    def file(self) -> str:
        return self.location.rpartition(":")[0]

    @property
    def line(self) -> int:
        return int(self.location.rpartition(":")[2] or 0)

    def covers(self, file: str, line: int) -> bool:
        return self.file == file and self.line <= line <= (self.end_line or self.line)

    @cached_property
    def regex(self) -> re.Pattern | None:
        """The pattern as `match` searches with it: without its leading holes, which a search finds anywhere anyway
        but which would make it try every position of a long line to its end (an f-string that starts with a
        value, `{x} is not supported yet.`, took 27 ms on one 4 KB line)."""
        if not self.pattern:
            return None
        pattern = self.pattern
        while pattern.startswith(".*?"):
            pattern = pattern[3:]
        return re.compile(pattern)

    @cached_property
    def capturing(self) -> re.Pattern | None:
        """The pattern with each hole a group (escaped literal text never holds an unescaped `.*?`)."""
        if not self.pattern:
            return None
        pattern = self.pattern.replace(_NUMBER, "(" + _NUMBER + ")").replace(".*?", "(.*?)")
        if pattern.endswith("(.*?)"):  # a hole at the end takes the rest of the line
            pattern = pattern[:-5] + "(.*)"
        return re.compile(pattern)

    @property
    def literal_length(self) -> int:
        """How much of the pattern is literal text: a longer one is the more specific match."""
        return len(_HOLE.sub("", (self.pattern or "").replace(_NUMBER, "")).replace("\\", ""))


class SiteIndex:
    def __init__(self, sites: list[dict]) -> None:
        fields = Site.__dataclass_fields__
        self.sites = [Site(**{k: s.get(k) for k in fields if k not in ("words", "holes")},  # type: ignore[arg-type]
                           words=tuple(s.get("words") or ()),
                           holes=tuple(s["holes"]) if s.get("holes") is not None else None) for s in sites]
        words_of = [s.get("words") or [] for s in sites]
        frequency = Counter(w for words in words_of for w in set(words))
        self._by_word: dict[str, list[Site]] = defaultdict(list)
        self._by_place: dict[tuple[str, int], list[Site]] = defaultdict(list)
        self._by_file: dict[str, list[Site]] = defaultdict(list)
        for site, words in zip(self.sites, words_of):
            if site.pattern and words:
                key = min(words, key=lambda w: (frequency[w], -len(w)))
                self._by_word[key].append(site)
            self._by_place[(site.file.rpartition("/")[2], site.line)].append(site)
            self._by_file[site.file].append(site)

    @classmethod
    def of_sites(cls, sites: list[Site]) -> SiteIndex:
        """An index over sites already read (another index's)."""
        index = cls([])
        index.sites = list(sites)
        frequency = Counter(w for site in sites for w in set(site.words))
        for site in sites:
            if site.pattern and site.words:
                index._by_word[min(site.words, key=lambda w: (frequency[w], -len(w)))].append(site)
            index._by_place[(site.file.rpartition("/")[2], site.line)].append(site)
            index._by_file[site.file].append(site)
        return index

    def match(self, text: str) -> list[tuple[Site, re.Match]]:
        """The sites whose pattern is found in `text`, the most specific (most literal text) first."""
        found: dict[int, tuple[Site, re.Match]] = {}
        text = text[:MAX_MATCHED]
        words = set(_WORD.findall(text))
        for word in words:
            for site in self._by_word.get(word, ()):
                if id(site) in found or not words.issuperset(site.words):
                    continue
                hit = site.regex.search(text) if site.regex is not None else None
                if hit is not None:
                    found[id(site)] = (site, hit)
        return sorted(found.values(), key=lambda pair: -pair[0].literal_length)

    def at(self, file: str, line: int) -> list[Site]:
        """The sites at `file` (a relpath) `line` (within a multi-line statement)."""
        return [s for s in self._by_file.get(file, ()) if s.covers(file, line)]

    def logged_at(self, basename: str, line: int) -> list[Site]:
        """Logger calls at `basename:line` (vLLM's log prefix names only the file's base name)."""
        return [s for s in self._by_place.get((basename, line), ()) if s.kind == "log"]

    def has_file(self, file: str) -> bool:
        return file in self._by_file
