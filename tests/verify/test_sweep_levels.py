"""--concurrency as a list of levels (compat/verify/sweep/levels.py), and what each level sends."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from compat.verify.sweep.levels import MAX_REQUESTS, MIN_REQUESTS, concurrency_list, requests_for


def test_a_list_of_levels_is_sorted():
    assert concurrency_list("16, 1,4,2") == (1, 2, 4, 16) and concurrency_list("4") == (4,)


@pytest.mark.parametrize("text, words", [("1,,2", "missing"), ("1,two", "'two' is not a whole number"),
                                         ("0,2", "at least 1"), ("2,2048", "at most 1024"), ("2,2", "listed twice"), ("1.5", "not a whole"),
                                         ("-1", "not a whole"), (",".join(map(str, range(1, 20))), "at most 16")])
def test_what_is_not_a_list_of_levels(text, words):
    with pytest.raises(argparse.ArgumentTypeError, match=words):
        concurrency_list(text)


def test_requests_per_level_are_bounded():
    assert requests_for(1, None) == MIN_REQUESTS and requests_for(16, None) == 32
    assert requests_for(1024, None) == MAX_REQUESTS
    assert requests_for(8, 4) == 8 and requests_for(2, 4) == 4  # at least the level: every slot gets a request
    assert requests_for(4, {4: 12}) == 12 and requests_for(2, {4: 12}) == MIN_REQUESTS


def test_the_command_line_refuses_a_list_that_is_not_one():
    proc = subprocess.run([sys.executable, "-m", "compat", "verify", "--server", "http://127.0.0.1:9", "--concurrency",
                           "1,x,4"], capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2], timeout=60)
    assert proc.returncode == 2 and "--concurrency" in proc.stderr and "'x' is not a whole number" in proc.stderr
    assert "Traceback" not in proc.stderr
