"""Issue 33, items 3 and 5: a mistyped command gets a "did you mean"; long work says where it is in a CI log."""

from __future__ import annotations

import io

from cli_helpers import compat

from compat.core.console import progress_lines


def test_a_mistyped_command_gets_did_you_mean(tmp_path):
    run = compat("doctr", "a", "b", cwd=tmp_path)
    assert run.code == 2 and "fix: did you mean compat doctor?" in run.err and "Traceback" not in run.err
    far = compat("xyzzy", cwd=tmp_path)
    assert far.code == 2 and "did you mean" not in far.err and "compat --help lists the commands" in far.err
    as_json = compat("doctr", "--json", cwd=tmp_path)
    assert as_json.json()["fix"].startswith("did you mean compat doctor?")


def test_progress_lines_where_no_bar_can_be_drawn(monkeypatch):
    import time

    clock = iter([0.0, 0.0, 1.0, 6.0, 20.0, 20.0])  # start; a, b, c; the end
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    out = io.StringIO()
    assert list(progress_lines("matrix", ["a", "b", "c"], "releases", every=5, stream=out)) == ["a", "b", "c"]
    assert out.getvalue().splitlines() == ["matrix: releases: 3 to do", "matrix: releases 2/3 (c), 6 s",
                                           "matrix: releases done, 3 in 20 s"]
