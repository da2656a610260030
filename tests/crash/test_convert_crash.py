"""issue 11: `compat convert ckpt` SIGKILLed at every write-like syscall (strace fault injection).

CI kills at every write-like call of a plain conversion and of a --force replacement (60+ kills),
one syscall at a time (strace counts each syscall separately: convert_kills.py); the stress
campaign (COMPAT_STRESS=1) adds sharded outputs and random-delay kills (200+). After each kill: SRC
unchanged; DST absent or complete (with --force: the old DST or the new one, never absent); the next
run names and removes every leftover and ends with the complete DST. See convert_kills.py.
"""

from __future__ import annotations

import random

import pytest

import strace_kill
from convert_kills import Scenario, every_point, kill_after, kill_at

pytestmark = pytest.mark.strace  # tests/parts.py: skipped without strace, with the command that installs it


def assert_clean(outcomes) -> None:
    bad = [(o.point, o.problems) for o in outcomes if o.problems]
    assert not bad, bad
    assert any(o.killed for o in outcomes) and not outcomes[-1].killed  # the walk reached a run that completed


@pytest.mark.parametrize("force", [False, True], ids=["new DST", "--force over an old DST"])
def test_killed_at_every_write(tmp_path, force):
    scenario = Scenario(tmp_path, force=force)
    counts = scenario.write_calls()
    assert {"mkdir", "renameat2", "fsync", "copy_file_range"} <= set(counts) or {"mkdir", "rename", "fsync"} <= set(counts)
    outcomes = kill_at(scenario, every_point(counts))
    assert sum(o.killed for o in outcomes) >= 25  # both together: at least 50 kills in CI
    assert_clean(outcomes)
    assert sum(bool(o.leftovers) for o in outcomes) > 0  # the kills do leave directories: recovery is exercised
    if force:
        assert {o.dst for o in outcomes} == {"old", "new"}


@pytest.mark.stress
@pytest.mark.parametrize("force", [False, True], ids=["new DST", "--force over an old DST"])
def test_stress_sharded_output_killed_at_every_write(tmp_path, force):
    scenario = Scenario(tmp_path, force=force, extra=("--max-shard-size", "40KB"))
    assert_clean(kill_at(scenario, every_point(scenario.write_calls())))


@pytest.mark.stress
@pytest.mark.parametrize("force", [False, True], ids=["new DST", "--force over an old DST"])
def test_stress_killed_after_random_delays(tmp_path, force):
    scenario = Scenario(tmp_path, force=force)
    rng = random.Random(11)
    outcomes = kill_after(scenario, [rng.uniform(0.05, 1.5) for _ in range(60)])
    bad = [(o.point, o.problems) for o in outcomes if o.problems]
    assert not bad, bad
