"""Issue 33, items 3 and 5: a mistyped command gets a "did you mean"; long work says where it is in a CI log."""

from __future__ import annotations

import io

from cli_helpers import compat

from compat.core.console import Heartbeat, progress_lines


def test_a_mistyped_command_gets_did_you_mean(tmp_path):
    run = compat("doctr", "a", "b", cwd=tmp_path)
    assert run.code == 2 and "fix: did you mean compat doctor?" in run.err and "Traceback" not in run.err
    far = compat("xyzzy", cwd=tmp_path)
    assert far.code == 2 and "did you mean" not in far.err and "compat --help lists the commands" in far.err
    as_json = compat("doctr", "--json", cwd=tmp_path)
    assert as_json.json()["fix"].startswith("did you mean compat doctor?")


def test_progress_lines_where_no_bar_can_be_drawn(monkeypatch):
    import time

    now = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    out = io.StringIO()
    lines = progress_lines("matrix", ["a", "b", "c"], "releases", every=5, stream=out)
    for item, then in (("a", 1.0), ("b", 6.0), ("c", 20.0)):  # when the item is done
        assert next(lines) == item
        now[0] = then
    assert list(lines) == []
    assert out.getvalue().splitlines() == ["matrix: releases: 3 to do", "matrix: releases 2/3 (c), 6 s",
                                           "matrix: releases done, 3 in 20 s"]


class _Lines(io.StringIO):
    """A stream a test can wait on: `seen` is set once a line holding `wanted` is written."""

    def __init__(self, wanted: str):
        import threading

        super().__init__()
        self.wanted, self.seen = wanted, threading.Event()

    def write(self, text: str) -> int:
        if self.wanted in text:
            self.seen.set()
        return super().write(text)


def test_an_item_that_takes_long_still_gets_a_line_every_few_seconds():
    """Issue 40, point 2: into a pipe, one release probed for two minutes was two minutes of silence (a line came only
    when the next item began). Now a line comes while the item runs: here the test holds the item until it does."""
    out = _Lines("releases 1/3 (b)")
    lines = progress_lines("doctor", ["a", "b", "c"], "releases", every=0.05, stream=out)
    assert next(lines) == "a" and next(lines) == "b"
    assert out.seen.wait(60), out.getvalue()  # "b" is still being worked on: the heartbeat spoke
    assert list(lines) == ["c"]
    assert out.getvalue().splitlines()[0] == "doctor: releases: 3 to do"
    assert out.getvalue().splitlines()[-1].startswith("doctor: releases done, 3 in ")


def test_a_heartbeat_says_what_is_being_done_and_stops_with_the_work():
    out = _Lines("copying tensors: 1.0 GB of 4.0 GB")
    with Heartbeat("convert", every=0.05, stream=out) as beat:
        beat.state = "copying tensors: 1.0 GB of 4.0 GB"
        assert out.seen.wait(60)
    said = out.getvalue()
    assert said.startswith("convert: copying tensors: 1.0 GB of 4.0 GB, ") and said.endswith(" s\n")
    import time

    time.sleep(0.2)  # not a timing assertion: nothing more may come once the work is done, however long we look
    assert out.getvalue() == said
