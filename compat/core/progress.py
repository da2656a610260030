"""What long work reports while it runs: one protocol, whatever shows it.

Long work (the releases doctor --releases and the matrix go through, the manifests doctor checks, a sweep's
requests) says what it does through a `Progress`; what shows it is the reporter's business: a bar on a terminal,
a line every few seconds into a log (compat/core/console.py), nothing under -q or --json (`QUIET`):

    progress.start("probing vllm releases", total=12)  # a batch of `total` units begins
    progress.item("0.16.0")                            # what the next unit is (a bar's description)
    progress.advance()                                 # one unit (or `n`) done
    progress.status("waiting for the server")          # a line about what is happening now
    progress.end(completed=True)                       # the batch is over (False: it stopped on an error)

`each(progress, items, label)` reports an iteration: it yields the items, telling the reporter of each.
`compat verify --server` reports its requests through it too (compat/verify/server/progress.py).
"""

from __future__ import annotations

from typing import Iterable, Iterator, Protocol, TypeVar

T = TypeVar("T")

__all__ = ["Progress", "QUIET", "each"]


class Progress(Protocol):
    def status(self, text: str) -> None: ...
    def start(self, label: str, total: int) -> None: ...
    def item(self, name: str) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def end(self, completed: bool) -> None: ...


class _Quiet:
    """Reports nothing (-q, --json, a library call)."""

    def status(self, text: str) -> None:
        pass

    def start(self, label: str, total: int) -> None:
        pass

    def item(self, name: str) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def end(self, completed: bool) -> None:
        pass


QUIET: Progress = _Quiet()


def each(progress: Progress, items: Iterable[T], label: str) -> Iterator[T]:
    """The items, each told to `progress` before it is worked on and counted when the caller asks for the next; the
    batch ends when the items do (or the caller stops early, or fails)."""
    listed = list(items)
    progress.start(label, len(listed))
    completed = False
    try:
        for item in listed:
            progress.item(str(item))
            yield item
            progress.advance()
        completed = True
    finally:
        progress.end(completed)
