"""Kill `compat patch` and `compat patch --revert` hundreds of times and count what is left behind.

    python bench/bench_crash.py                 # 200 kills of each: every write-like syscall, the rest at random delays
    python bench/bench_crash.py --runs 50       # a quicker campaign
    python bench/bench_crash.py --json          # the figures as JSON

Each kill is a SIGKILL (strace `inject=SYSCALL:signal=KILL:when=N` at the run's N-th write-like call,
or after a random delay in the part of the run that writes) of a real `compat patch` process on a
small vLLM-shaped tree (three patches, four files, cached bytecode in the three invalidation modes);
then one compat command runs on the tree (`--status`, `compat probe`, `--dry-run`, apply or
`--revert`, in turn) and the tree is checked (tests/crash/patch_campaign.py): byte for byte the
original or fully patched, no temp file or journal, no stale bytecode, `--status` agreeing, and
`--revert` giving the original bytes. Goal (issue 11): 0 leftovers and 0 unrecoverable trees.

Columns: runs; killed (the rest finished before their kill point); partial states (right after
the kill, some files changed and not others); mid-state (a partial state, a journal or a temp file
right after the kill: what the next run had to settle); leftovers after the next run; unrecoverable
(any check failed).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "crash"))

from patch_campaign import Campaign, summary  # noqa: E402
import strace_kill  # noqa: E402


def campaign(operation: str, runs: int, workdir: Path, seed: int) -> tuple[dict, list]:
    c = Campaign(workdir / operation, operation)
    points = c.spread(runs)
    delays = c.delays(max(0, runs - len(points)), seed=seed)
    started = time.monotonic()
    outcomes = c.run(points, delays)
    figures = summary(operation, outcomes)
    figures.update({"write-like calls per run": len(c.sequence()), "syscall kill points": len(points),
                    "random-delay kills": len(delays), "seconds": round(time.monotonic() - started)})
    return figures, [o for o in outcomes if o.problems]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=200, help="kills per operation (default 200)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not strace_kill.available():
        print("strace is not installed", file=sys.stderr)
        return 2
    rows, failures = [], []
    with tempfile.TemporaryDirectory(prefix="compat-bench-crash-") as tmp:
        for operation in ("patch", "revert"):
            figures, bad = campaign(operation, args.runs, Path(tmp), args.seed)
            rows.append(figures)
            failures += [(operation, o.n, o.delay, o.problems) for o in bad]
    if args.json:
        print(json.dumps({"campaigns": rows, "failures": [list(map(str, f)) for f in failures]}, indent=2))
    else:
        keys = ["operation", "runs", "killed", "partial states", "mid-state (journal, temp file or partial)",
                "leftovers after the next run", "unrecoverable"]
        print("| " + " | ".join(keys) + " |")
        print("|" + " --- |" * len(keys))
        for row in rows:
            print("| " + " | ".join(str(row[k]) for k in keys) + " |")
        for row in rows:
            print(f"{row['operation']}: {row['write-like calls per run']} write-like calls per run; "
                  f"{row['syscall kill points']} kills at syscalls, {row['random-delay kills']} after random delays; {row['seconds']} s")
        for failure in failures:
            print("FAILED", *failure)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
