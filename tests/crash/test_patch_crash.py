"""`compat patch` and `compat patch --revert` killed (SIGKILL) at evenly spaced write-like syscalls and after
random delays: the next compat run on the tree settles it, leaving the original or the fully patched
bytes, no temp file, no journal, no stale bytecode, a `--status` that agrees, and a byte-identical
`--revert` (tests/crash/patch_campaign.py says how). OSErrors are injected with strace too.

CI runs 50 kills of each operation; COMPAT_STRESS=1 runs every syscall point plus random delays,
200+ of each (bench/bench_crash.py prints the same campaigns' figures).
"""

from __future__ import annotations

import errno
import json
import os

import pytest

import strace_kill
from patch_campaign import ORIGINAL, PATCHED, Campaign, compat, leftovers

pytestmark = pytest.mark.strace  # tests/parts.py: skipped without strace, with the command that installs it

CI_KILLS = 50
STRESS_KILLS = 200


def _assert_recovered(outcomes, expected_runs: int):
    assert len(outcomes) >= expected_runs
    bad = [(o.n, o.delay, o.first_command, o.problems) for o in outcomes if o.problems]
    assert not bad, "\n".join(map(str, bad))
    assert sum(o.killed for o in outcomes) >= expected_runs - 1  # only the last point may come after the run's end


@pytest.mark.parametrize("operation", ["patch", "revert"])
def test_killed_at_write_syscalls_is_settled_by_the_next_run(tmp_path, operation):
    campaign = Campaign(tmp_path, operation)
    points = campaign.spread(CI_KILLS)
    assert len(points) >= CI_KILLS, f"the run makes only {len(points)} write-like calls"
    outcomes = campaign.run(points)
    _assert_recovered(outcomes, CI_KILLS)
    # the kills did reach the states only the journal can repair
    assert any(o.raw_state not in (ORIGINAL, PATCHED) for o in outcomes)
    assert any(o.raw_leftovers for o in outcomes)


@pytest.mark.stress
@pytest.mark.parametrize("operation", ["patch", "revert"])
def test_stress_every_syscall_and_random_delays(tmp_path, operation):
    campaign = Campaign(tmp_path, operation)
    points = campaign.spread(10_000)  # every one
    outcomes = campaign.run(points, campaign.delays(max(0, STRESS_KILLS - len(points)), seed=11))
    assert len(outcomes) >= STRESS_KILLS
    bad = [(o.n, o.delay, o.first_command, o.problems) for o in outcomes if o.problems]
    assert not bad, "\n".join(map(str, bad))


# -- OSErrors, injected by strace ------------------------------------------------------------------
def point(sequence: list[str], what: str) -> int:
    """Where in a run's write-like calls (1-based) a named step happens; every file write is
    write, fchmod, fsync, rename, fsync (the directory), its bytecode's unlinks come before it."""
    fchmods = [i + 1 for i, name in enumerate(sequence) if name == "fchmod"]
    unlinks = [i + 1 for i, name in enumerate(sequence) if name == "unlink"]
    return {
        "journal write": fchmods[0] - 1, "source write": fchmods[1] - 1, "record write": fchmods[-1] - 1,
        "source fsync": fchmods[1] + 1, "source rename": fchmods[1] + 2, "source fchmod": fchmods[1],
        "bytecode unlink": unlinks[0], "record unlink": unlinks[-2], "journal unlink": unlinks[-1],
        "stdout after the change": len(sequence),
    }[what]


INJECTED = {
    "patch": [(errno.ENOSPC, "journal write"), (errno.ENOSPC, "source write"), (errno.EIO, "source fsync"),
              (errno.EIO, "record write"), (errno.EACCES, "source rename"), (errno.EROFS, "bytecode unlink"),
              (errno.EPERM, "source fchmod"), (errno.ENOSPC, "stdout after the change")],
    "revert": [(errno.ENOSPC, "source write"), (errno.EIO, "source rename"), (errno.EACCES, "bytecode unlink"),
               (errno.EROFS, "journal write"), (errno.EPERM, "record unlink"), (errno.EIO, "journal unlink"),
               (errno.EIO, "stdout after the change")],
}
CASES = [(op, code, what) for op, cases in INJECTED.items() for code, what in cases]


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    return {op: Campaign(tmp_path_factory.mktemp(op), op) for op in INJECTED}


@pytest.mark.parametrize("operation, code, what", CASES, ids=[f"{op}-{errno.errorcode[c]}-{w.replace(' ', '-')}" for op, c, w in CASES])
def test_an_injected_oserror_is_one_line_and_changes_nothing(campaigns, operation, code, what):
    import subprocess

    campaign = campaigns[operation]
    sequence = campaign.sequence()
    k = point(sequence, what)
    name, nth = sequence[k - 1], sequence[:k].count(sequence[k - 1])
    root = campaign.fresh()
    before = campaign.classify(root)
    proc = subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, "-e", f"trace={name}",
                           "-e", f"inject={name}:error={errno.errorcode[code]}:when={nth}", *campaign.argv(root)],
                          capture_output=True, text=True, env=campaign.env, timeout=300)
    where = f"{operation}: {errno.errorcode[code]} at {what} (call {k}, {name} #{nth}): exit {proc.returncode}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, where
    after = campaign.classify(root)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    if what == "stdout after the change":  # the change was made; printing it failed
        assert proc.returncode == 5 and after != before and after in (ORIGINAL, PATCHED), where
        assert lines[-1].startswith("error: ") and "but printing the result failed" in lines[-1], where
    elif what == "journal unlink":  # every change was made: done, and the next run removes the journal
        assert proc.returncode == 0 and after != before and after in (ORIGINAL, PATCHED), where
        assert "could not be removed" in proc.stdout and leftovers(root) == ["vllm/.compat-patches.journal"], where
        code_, out = compat("patch", "--path", str(root), "--status", "--json")
        assert code_ == 0 and any("made every change" in note for note in json.loads(out)["notes"]), where
    else:  # refused: exactly as before, and it says which file and what to do
        assert proc.returncode == 4 and after == before, where
        assert lines[-2].startswith("error: ") and lines[-1].startswith("  fix: ") and str(root) in lines[-2], where
        assert "nothing was changed" in lines[-2], where
    assert not leftovers(root), where
    code_, out = compat("patch", "--path", str(root), "--status", "--json")
    assert code_ == 0 and campaign.classify(root) == after and not leftovers(root), where
