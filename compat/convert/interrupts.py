"""SIGINT, SIGTERM and SIGHUP during a conversion: clean up, and never in the middle of the swap.

While a conversion writes, each of the three signals raises `Interrupted` (a KeyboardInterrupt, so
the CLI says "interrupted" and exits 130) in the main thread, and the writer's cleanup removes its
temporary directory. Inside `deferred()` (the swap that puts DST in place) a signal is only noted
and acted on after the block, and signals arriving while the cleanup runs are ignored, so a second
Ctrl-C cannot leave a half-removed directory. SIGKILL cannot be caught: the owner markers of
staging.py let the next run clean up after it.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Literal

SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s)


class Interrupted(KeyboardInterrupt):
    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class SignalGuard:
    def __init__(self):
        self.pending: int | None = None
        self._deferring = False
        self._raised = False
        self._previous: dict = {}

    def __enter__(self) -> "SignalGuard":
        if threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> Literal[False]:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        return False

    def _handle(self, signum, frame) -> None:
        if self._deferring or self._raised:
            self.pending = self.pending or signum
            return
        self._raised = True
        raise Interrupted(signum)

    def cleaning(self) -> None:
        """From here on (the cleanup after a failure) signals are noted, not raised."""
        self._raised = True

    @contextmanager
    def deferred(self):
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
