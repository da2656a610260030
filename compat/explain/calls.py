"""A release's accesses and calls (probes/_call_sites.py), indexed by name: where its code reads an attribute, passes
a keyword, calls a name or subscripts with a literal key, each with its file, line and function.

Read from the same files as the release's error sites and kept in the facts cache beside its report (its own entry:
doctor and the other readers of the report never load it); read only when a message needs it (an error Python raised
at an access, a name in a paste), never for a log whose errors the raise sites explain.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from compat.core.tree import EngineTree

_CALLS: dict[tuple, CallIndex] = {}


@dataclass(frozen=True)
class Access:
    """One line of the release that makes an access (`name`: the fact's key, `positions`, `eagle=`, `['k']`, `f(`)."""

    name: str
    file: str
    line: int
    function: str | None

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"


class CallIndex:
    def __init__(self, fact: dict) -> None:
        self.files: list[str] = list(fact.get("files") or [])
        self._names: dict[str, list] = fact.get("names") or {}
        spans: dict[int, list[tuple[int, int, str]]] = {}
        for index, first, last, name in fact.get("functions") or ():
            spans.setdefault(index, []).append((first, last, name))
        self._spans = {index: sorted(found) for index, found in spans.items()}

    def of(self, key: str) -> list[Access]:
        """Every line that makes the access `key`, in file and line order."""
        out = []
        for index, *lines in self._names.get(key, ()):
            if not 0 <= index < len(self.files):
                continue
            for line in lines:
                out.append(Access(key, self.files[index], line, self.function_at(index, line)))
        return out

    def function_at(self, index: int, line: int) -> str | None:
        """The innermost function whose lines hold `line`."""
        spans = self._spans.get(index, [])
        found = None
        for first, last, name in spans[:bisect.bisect_right(spans, (line, float("inf"), ""))]:
            if first <= line <= last and (found is None or first >= found[0]):
                found = (first, name)
        return found[1] if found else None


def calls_of(tree: EngineTree, files: list[str]) -> CallIndex:
    """The release's call sites over `files` (its error_sites files), from the facts cache or read once."""
    from compat import facts
    from compat.probes.call_sites import call_sites

    key = (tree.engine, str(tree.root), tree.version, len(files))
    index = _CALLS.get(key)
    if index is None:
        fact = facts.memo(tree, "explain-calls", None, lambda: call_sites(tree, files))
        index = _CALLS[key] = CallIndex(fact or {})
    return index
