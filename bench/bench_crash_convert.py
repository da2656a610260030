"""Kill `compat convert ckpt` at every write-like syscall and at random delays; count what is left.

    python bench/bench_crash_convert.py [--delays 50] [--dir /tmp] [--seed 1]

Four scenarios (a new DST and --force over an old DST, single-file and sharded output), each killed
with SIGKILL at every write/rename/fsync/unlink/mkdir/copy_file_range call it makes (strace fault
injection: tests/crash/strace_kill.py), then at --delays random instants. After each kill the same
command runs again, unkilled. Printed per scenario, for the README (issue 11):

    runs        kills (and the final unkilled run of each walk)
    partial     DSTs that were neither absent nor exactly complete (with --force: old or new)
    absent      --force runs after which DST did not exist
    src changed runs after which SRC differed
    left        runs that left a directory beside DST (what the next run must clean up)
    unnamed     leftovers the next run removed without naming them (or did not remove)
    after       leftovers still there after the next run
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "crash"))
import strace_kill  # noqa: E402
from convert_kills import Scenario, every_point, kill_after, kill_at  # noqa: E402


def summarise(name: str, outcomes) -> dict:
    row = {
        "scenario": name, "runs": len(outcomes), "killed": sum(o.killed for o in outcomes),
        "partial": sum(o.dst == "partial" for o in outcomes),
        "absent": sum(o.force and o.dst == "absent" for o in outcomes),
        "src changed": sum(o.src_changed for o in outcomes),
        "left": sum(bool(o.leftovers) for o in outcomes),
        "unnamed": sum(bool(o.unexplained) for o in outcomes),
        "after": sum(bool(o.leftovers_after) for o in outcomes),
        "bad": [(o.point, o.problems) for o in outcomes if o.problems],
    }
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delays", type=int, default=50, help="random-delay kills per scenario (default 50)")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not strace_kill.available():
        raise SystemExit("needs strace")
    rng = random.Random(args.seed)
    rows = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="compat-crash-bench-") as tmp:
        for name, force, extra in (("new DST", False, ()), ("--force over old DST", True, ()),
                                   ("new DST, sharded", False, ("--max-shard-size", "40KB")),
                                   ("--force, sharded", True, ("--max-shard-size", "40KB"))):
            scenario = Scenario(Path(tmp) / name.replace(" ", "_").replace(",", ""), force=force, extra=extra)
            counts = scenario.write_calls()
            count = sum(counts.values())
            outcomes = kill_at(scenario, every_point(counts))
            duration = max(0.2, _run_time(scenario))
            outcomes += kill_after(scenario, [rng.uniform(0.0, duration) for _ in range(args.delays)])
            rows.append(summarise(f"{name} ({count} write calls)", outcomes))
            print(f"  {rows[-1]['scenario']}: {rows[-1]['runs']} runs done", file=sys.stderr, flush=True)
    columns = ["runs", "killed", "partial", "absent", "src changed", "left", "unnamed", "after"]
    print(f"\n{'scenario':44}" + "".join(f"{c:>12}" for c in columns))
    for row in rows:
        print(f"{row['scenario']:44}" + "".join(f"{row[c]:>12}" for c in columns))
    total = {c: sum(r[c] for r in rows) for c in columns}
    print(f"{'total':44}" + "".join(f"{total[c]:>12}" for c in columns))
    print(f"\n{time.monotonic() - started:.0f} s; every kill is SIGKILL (no cleanup can run); "
          "'left' directories were all named and removed by the next run when 'unnamed' and 'after' are 0")
    for row in rows:
        for point, problems in row["bad"]:
            print(f"PROBLEM {row['scenario']} at {point}: {problems}")
    return 1 if any(row["bad"] for row in rows) else 0


def _run_time(scenario: Scenario) -> float:
    import subprocess

    scenario.reset()
    start = time.monotonic()
    subprocess.run(scenario.argv, capture_output=True)
    elapsed = time.monotonic() - start
    scenario.reset()
    return elapsed


if __name__ == "__main__":
    sys.exit(main())
