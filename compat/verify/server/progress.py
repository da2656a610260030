"""Progress of `compat verify --server` on stderr: a bar per batch of requests on a terminal (rich), one line
per step and per tenth of a batch otherwise (a CI log stays short)."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any


class ServerProgress:
    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.terminal = enabled and sys.stderr.isatty()
        self.started = time.monotonic()
        self._bar: Any = None
        self._task: Any = None
        self._total = 0
        self._done = 0

    def __enter__(self) -> ServerProgress:
        if self.terminal:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=True)
            self._bar.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()

    def status(self, text: str) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.console.print(f"[dim]{text}[/]")
        else:
            self._line(text)

    def start(self, label: str, total: int) -> None:
        self._total, self._done = total, 0
        if self._bar is not None:
            self._task = self._bar.add_task(label, total=total)
        elif self.enabled:
            self._line(f"{label}: {total}")

    def item(self, name: str) -> None:
        pass  # a request is not named: the bar counts them

    def advance(self, n: int = 1) -> None:
        self._done += n
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task)
        elif self.enabled and self._total and (self._done == self._total or self._done % max(1, self._total // 10) == 0):
            self._line(f"{self._done}/{self._total} done")

    def end(self, completed: bool) -> None:
        pass  # the bar goes with the run (__exit__)

    def _line(self, text: str) -> None:
        print(f"verify: [{time.monotonic() - self.started:5.1f} s] {text}", file=sys.stderr, flush=True)
