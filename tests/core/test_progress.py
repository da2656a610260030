"""compat/core/progress.py: one protocol every long piece of work reports through (issue 39). `each` tells the
reporter of a batch, of each item before it is worked on, of each one done, and of the end (completed or not);
the console's reporters and the sweep's are reporters of it."""

from __future__ import annotations

import io

import pytest

from compat.core import console
from compat.core.progress import QUIET, Progress, each
from compat.verify.sweep.progress import SweepProgress


class Recorder:
    def __init__(self) -> None:
        self.said: list[tuple] = []

    def status(self, text: str) -> None:
        self.said.append(("status", text))

    def start(self, label: str, total: int) -> None:
        self.said.append(("start", label, total))

    def item(self, name: str) -> None:
        self.said.append(("item", name))

    def advance(self, n: int = 1) -> None:
        self.said.append(("advance", n))

    def end(self, completed: bool) -> None:
        self.said.append(("end", completed))


def test_each_reports_the_batch_every_item_and_its_end():
    seen = Recorder()
    assert list(each(seen, ["0.16.0", "0.17.0"], "releases")) == ["0.16.0", "0.17.0"]
    assert seen.said == [("start", "releases", 2), ("item", "0.16.0"), ("advance", 1), ("item", "0.17.0"),
                         ("advance", 1), ("end", True)]


def test_a_batch_stopped_early_or_failing_ends_not_completed():
    seen = Recorder()
    walk = each(seen, ["a", "b", "c"], "releases")
    assert next(walk) == "a"
    walk.close()
    assert seen.said[-1] == ("end", False) and ("item", "b") not in seen.said
    failing = Recorder()
    with pytest.raises(RuntimeError, match="probe failed"):
        for _ in each(failing, ["a"], "releases"):
            raise RuntimeError("probe failed")
    assert failing.said[-1] == ("end", False)


def test_the_console_reporter_into_a_pipe_says_lines(monkeypatch):
    import time

    now = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    out = io.StringIO()
    monkeypatch.setattr(console.sys, "stderr", out)
    reporter: Progress = console.progress_bar("matrix")
    for item, then in zip(each(reporter, ["a", "b"], "releases"), (6.0, 12.0)):
        now[0] = then
    assert out.getvalue().splitlines() == ["matrix: releases: 2 to do", "matrix: releases 1/2 (b), 6 s",
                                           "matrix: releases done, 2 in 12 s"]


def test_quiet_and_the_sweeps_reporter_take_the_same_calls():
    out = io.StringIO()
    reporters: list[Progress] = [QUIET, SweepProgress(3, enabled=True, stream=out)]
    for reporter in reporters:
        assert list(each(reporter, ["x", "y"], "level 1 to 2")) == ["x", "y"]
        reporter.status("warming up")
    assert "sweep: " in out.getvalue() and "level 1: 2 requests" in out.getvalue() and "warming up" in out.getvalue()
