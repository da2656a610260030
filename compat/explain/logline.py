"""One line of a log as the engine meant it: every prefix a process, a logger or a tool put before it removed and
kept as context (which process wrote it, at what level, from which file and line).

    read(Line) -> LogLine

The prefixes are the ones compat/explain/prefixes.py reads from the engines' logging set-up and the tools around
them (kubectl, journald, docker compose); they are removed as long as one is found at the start, in any order and
nesting (`[pod/x/vllm] 2026-12-05T09:11:52Z (EngineCore_DP0 pid=7) [rank0]: ...`). A line's `process` is what its
prefixes say about the process that wrote it, so that interleaved lines of several processes can be read apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from compat.explain import structured
from compat.explain.prefixes import CLASSES, PREFIXES, Prefix
from compat.explain.text import Line, clean

# Ray's log deduplication (ray/_private/ray_logging/__init__.py, LogDeduplicator): a line other actors also wrote
# ends ` [repeated 3x across cluster]`, the first such line also `(Ray deduplicates logs by default. ...)`.
_RAY_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\](?: \(Ray deduplicates logs[^)]*\))?\s*$")
MAX_PREFIXES = 8  # prefixes removed from one line at most (a hostile line of a thousand `[rank0]: ` is text)


@dataclass(frozen=True)
class LogLine:
    number: int
    text: str  # the line without its prefixes
    raw: str  # the line as given (colours already removed)
    process: str = ""  # who wrote it, as its prefixes say ("EngineCore_DP0 pid=42", "rank0", "TP3 EP3"), or ""
    level: str | None = None  # the logger's level when the line has a log head
    place: tuple[str, int] | None = None  # vLLM's `[file.py:123]`: the logger call (its base name or short path)
    record: str = ""  # the log head as written (level, time, place): a record's further lines repeat it (vLLM 0.32+)


def _combined(prefixes: tuple[Prefix, ...]) -> tuple[re.Pattern | None, tuple[Prefix, ...]]:
    """One pattern trying each prefix in turn (`p0`, `p1`, ... its groups renamed `p0_who`, ...): one match a step."""
    if not prefixes:
        return None, ()
    parts = []
    for i, prefix in enumerate(prefixes):
        body = re.sub(r"\(\?P<(\w+)>", rf"(?P<p{i}_\1>", prefix.pattern.pattern)
        parts.append(f"(?P<p{i}>{body})")
    return re.compile("|".join(parts)), prefixes


def _by_first_character() -> dict[str, tuple[re.Pattern | None, tuple[Prefix, ...]]]:
    """The prefixes that can start with each kind of character, as one pattern: a line is tried only against those."""
    return {key: _combined(tuple(p for p in PREFIXES if key in p.starts)) for key in CLASSES}


_TABLE = _by_first_character()
_NONE: tuple[re.Pattern | None, tuple[Prefix, ...]] = (None, ())


def _candidates(ch: str) -> tuple[re.Pattern | None, tuple[Prefix, ...]]:
    if not ch or ch.isspace():
        return _NONE
    if ch in "[(":
        return _TABLE[ch]
    if ch.isdigit():
        return _TABLE["digit"]
    if ch.isupper():
        return _TABLE["upper"]
    if ch.isalpha():
        return _TABLE["lower"]
    return _NONE


def read_all(line: Line) -> list[LogLine]:
    """The log lines one input line holds: itself, or the lines of the JSON record it is (compat/explain/structured.py),
    each read for its own prefixes, the record's writer and level kept where its lines name none."""
    record = structured.record_of(line.text) if line.text[:1] == "{" else None
    texts = structured.lines_of(record) if record is not None else None
    if record is None or texts is None:
        return [read(line)]
    writer, level, key = structured.writer_of(record), structured.level_of(record), f"json:{line.number}"
    out = []
    for text in texts:
        inner = read(Line(line.number, clean(text)))
        out.append(LogLine(line.number, inner.text, line.text, inner.process or writer, inner.level or level,
                           inner.place, inner.record or key))
    return out


def read(line: Line) -> LogLine:
    text = line.text
    if "x across cluster]" in text:
        text = _RAY_REPEATED.sub("", text)
    pos, who, level, place, record = 0, [], None, None, ""
    for _ in range(MAX_PREFIXES):
        pattern, prefixes = _candidates(text[pos:pos + 1])
        found = pattern.match(text, pos) if pattern is not None else None
        if found is None:
            break
        key = found.lastgroup or "p0"
        prefix = prefixes[int(key[1:])]
        groups = prefix.pattern.groupindex
        if "who" in groups:
            name = (found.group(key + "_who") or "").strip()
            if name:
                who.append(name)
        if "head" in groups:
            record = found.group(0)
            if "level" in groups:
                level = found.group(key + "_level")
            if "file" in groups:
                place = (found.group(key + "_file"), int(found.group(key + "_line")))
        pos = found.end()
    if not pos:
        return LogLine(line.number, text, text)
    return LogLine(line.number, text[pos:], text, " ".join(who), level, place, record)
