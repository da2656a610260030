"""`compat matrix` over a whole engine, as whole processes: the page rebuilt warm, and (once) the cold build.

    python bench/bench_matrix.py                       # vllm and sglang, default ranges, 3 warm runs each
    python bench/bench_matrix.py --engine sglang --runs 5
    python bench/bench_matrix.py --cold-facts          # first, one build with an empty facts cache (slow: every
                                                       # release probed, every patch planned and re-probed)

The command is the one a user types: `compat matrix --engine E --out DIR` (matrix.html + matrix.json, every
release of the default range x 10 families x 4 EAGLE-3 drafter kinds, and the other methods' 12 columns). Warm: the releases, their facts and the matrix
cells are cached (a priming run first, which is the cold build when the cache is empty). With --cold-facts the
facts go to a temporary COMPAT_FACTS_DIR, so the shared cache is neither used nor changed by that run.
Goal (issue 24): a warm rebuild of a whole engine's page <= 10 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_SECONDS = 10.0


def build(engine: str, out: Path, env: dict[str, str] | None = None) -> tuple[float, dict]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "compat", "matrix", "--engine", engine, "--out", str(out), "-q"],
                          env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"compat matrix --engine {engine} failed ({proc.returncode}): {proc.stderr}")
    return seconds, json.loads((out / "matrix.json").read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", action="append", choices=("vllm", "sglang"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cold-facts", action="store_true")
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench-matrix-") as work:
        for engine in args.engine or ["vllm", "sglang"]:
            out = Path(work) / engine
            if args.cold_facts:
                env = {**os.environ, "COMPAT_FACTS_DIR": str(Path(work) / f"facts-{engine}")}
                seconds, _ = build(engine, out, env)
                print(f"{engine}: cold facts {seconds:.1f} s")
            seconds, document = build(engine, out)  # priming: cold when the shared cache is
            print(f"{engine}: first run {seconds:.1f} s")
            times = [build(engine, out)[0] for _ in range(args.runs)]
            size = (out / "matrix.html").stat().st_size
            releases = len(document["engines"][engine]["versions"])
            median = statistics.median(times)
            print(f"{engine}: warm {median:.2f} s median of {args.runs} (min {min(times):.2f}, max {max(times):.2f}); "
                  f"{releases} releases x {len(document['columns'])} columns = {len(document['rows'])} cells; "
                  f"matrix.html {size / 1e6:.1f} MB; goal <= {GOAL_SECONDS:.0f} s: {'met' if median <= GOAL_SECONDS else 'MISSED'}")
            failed |= median > GOAL_SECONDS
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
