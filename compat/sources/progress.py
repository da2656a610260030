"""What a fetch tells the user while it runs, on stderr.

On a terminal: a bar per artifact that says when it is waiting (a retry's back-off, another process's
lock) instead of looking stuck. Elsewhere (a log, CI): one line when a fetch starts, one every few seconds while
bytes arrive (`fetching vllm 0.16.0 (29.2 MB sdist): 12.1 MB of 29.2 MB, 10 s`: a slow index never looks hung),
and one per retry or wait. With `enabled=False` (`-q`, `--json` pipes, library calls): nothing at all.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are strings here
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Progress", "human"]


def human(size: float | None) -> str:
    if size is None:
        return "size unknown"
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return ""


class Progress:
    """One fetch's progress: `start` a transfer, `advance`, `waiting(why)` while nothing moves, `close`."""

    def __init__(self, enabled: bool, *, terminal: bool | None = None, every: float | None = None, clock: Any = None):
        import time

        from compat.core.console import PROGRESS_EVERY_S

        self.enabled = enabled
        self.terminal = sys.stderr.isatty() if terminal is None else terminal
        self.every = PROGRESS_EVERY_S if every is None else every  # into a log: a line this often while bytes arrive
        self._clock = clock or time.monotonic
        self._bar: Any = None
        self._task: Any = None
        self._label = ""
        self._total: int | None = None
        self._done = 0
        self._started = self._last = 0.0

    def start(self, label: str, total: int | None, source: str) -> None:
        self.close()
        self._label = label
        self._total, self._done = total, 0
        self._started = self._last = self._clock()
        if not self.enabled:
            return
        if self.terminal:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress as Bar, TextColumn, TimeRemainingColumn, TransferSpeedColumn

            self._bar = Bar(
                TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                console=Console(stderr=True), transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task(f"fetching {label}", total=total)
        else:
            print(f"fetching {label} from {source}", file=sys.stderr, flush=True)
            _noted()

    def set_total(self, total: int | None) -> None:
        if total:
            self._total = total
        if self._bar is not None and total:
            self._bar.update(self._task, total=total)

    def advance(self, n: int) -> None:
        self._done += n
        if self._bar is not None:
            self._bar.update(self._task, advance=n, description=f"fetching {self._label}")
        elif self.enabled and not self.terminal:
            now = self._clock()
            if now - self._last >= self.every:
                of = f" of {human(self._total)}" if self._total else ""
                print(f"fetching {self._label}: {human(self._done)}{of}, {now - self._started:.0f} s", file=sys.stderr, flush=True)
                _noted()
                self._last = now

    def waiting(self, why: str) -> None:
        """Nothing moves for now, and why (`HTTP 503 from pypi.org; retry 2 of 5 in 1.0 s`)."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, description=f"waiting: {why}")
        else:
            print(f"waiting: {why}", file=sys.stderr, flush=True)
            _noted()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _noted() -> None:
    """A line went to stderr: a command's heartbeat (compat/core/console.py) need not say one for a while."""
    from compat.core.console import note_line

    note_line()
