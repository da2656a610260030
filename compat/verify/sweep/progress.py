"""Progress of a sweep on stderr: one bar over every request of every level on a terminal (rich), and into a log
(stderr not a terminal) a line at each batch and a line every `EVERY_S` seconds while one runs, so a CI log shows a
long level is alive without filling up."""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import Any

EVERY_S = 5.0


class SweepProgress:
    def __init__(self, total: int, *, enabled: bool = True, every: float = EVERY_S, stream: Any = None):
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.terminal = enabled and _isatty(self.stream)
        self.total, self.every = total, every
        self.started = time.monotonic()
        self.done = 0
        self.label = "starting"
        self.batch_done = self.batch_total = 0
        self._bar: Any = None
        self._task: Any = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def __enter__(self) -> SweepProgress:
        if self.terminal:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=Console(file=self.stream), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("sweep", total=self.total)
        elif self.enabled:
            threading.Thread(target=self._beat, name="compat-sweep-progress", daemon=True).start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._bar is not None:
            self._bar.stop()

    # -- compat.core.progress.Progress -------------------------------------------------------------------
    def status(self, text: str) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.console.print(f"[dim]{text}[/]")
        else:
            self._line(text)

    def start(self, label: str, total: int) -> None:
        with self._lock:
            self.label, self.batch_done, self.batch_total = label.split(" to ")[0], 0, total
        if self._bar is not None:
            self._bar.update(self._task, description=f"sweep: {self.label}")
        elif self.enabled:
            self._line(f"{self.label}: {total} requests")

    def item(self, name: str) -> None:
        pass  # the requests of a level are not named

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            self.batch_done += n
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def end(self, completed: bool) -> None:
        pass  # the bar lasts the whole sweep: it stops when the `with` does

    # -- a log ---------------------------------------------------------------------------------------
    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            with self._lock:
                text = (f"{self.label}: {self.batch_done}/{self.batch_total} requests; "
                        f"sweep {self.done}/{self.total}")
            self._line(text)

    def _line(self, text: str) -> None:
        try:
            print(f"sweep: [{time.monotonic() - self.started:6.1f} s] {text}", file=self.stream, flush=True)
        except (OSError, ValueError):
            pass


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
