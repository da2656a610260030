"""Prometheus text exposition (what `/metrics` answers), parsed for the series verify asks for.

Only samples whose name is wanted are decoded (a large server exposes thousands of lines); a malformed
line is skipped, never fatal: the answer is someone else's. Values are finite floats: `NaN` and `±Inf` (which no
counter verify reads can hold) are no value, and a sum that overflows is none either.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+\S+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)


def parse(text: str, wanted: set[str] | frozenset[str]) -> list[Sample]:
    """The samples of `text` whose name is in `wanted`."""
    out: list[Sample] = []
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        head = line.split("{", 1)[0].split(" ", 1)[0]
        if head not in wanted:
            continue
        m = _SAMPLE.match(line)
        if m is None:
            continue
        labels = _labels(m.group(2) or "")
        value = _number(m.group(3))
        if labels is not None and value is not None:
            out.append(Sample(m.group(1), labels, value))
    return out


def names_present(text: str, prefix: str) -> set[str]:
    """Every sample name starting with `prefix` (to tell 'no such series' from 'series at zero')."""
    found = set()
    for line in text.splitlines():
        if line.startswith(prefix):
            found.add(line.split("{", 1)[0].split(" ", 1)[0])
    return found


def _labels(block: str) -> tuple[tuple[str, str], ...] | None:
    if not block:
        return ()
    inner = block[1:-1]
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(inner):
        m = _LABEL.match(inner, pos)
        if m is None:
            return None if inner[pos:].strip() else tuple(out)
        out.append((m.group(1), m.group(2).replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")))
        pos = m.end()
    return tuple(out)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def total(samples: list[Sample], name: str, **match: str) -> float | None:
    """Sum of `name` over its label sets (engines, DP ranks), restricted to labels `match`; None if absent."""
    values = [s.value for s in samples if s.name == name and all(s.label(k) == v for k, v in match.items())]
    summed = sum(values) if values else None
    return summed if summed is not None and math.isfinite(summed) else None


def by_label(samples: list[Sample], name: str, label: str, **match: str) -> dict[str, float]:
    """`name` summed per value of `label` (e.g. per `position`)."""
    out: dict[str, float] = {}
    for s in samples:
        if s.name == name and s.label(label) is not None and all(s.label(k) == v for k, v in match.items()):
            key = s.label(label) or ""
            out[key] = out.get(key, 0.0) + s.value
    return {key: value for key, value in out.items() if math.isfinite(value)}
