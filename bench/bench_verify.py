"""Time `compat verify` of the tiny Llama pair plus `compat verify --canary` on this machine.

    python bench/bench_verify.py [--python ENGINE_PY] [--family F ...] [--repeat N]

The pair is written by the product's builder (compat/verify/engine_side/oracle_models.py, run by
ENGINE_PY), then both commands run as a user runs them (`python -m compat ... --json`), each in its
own child process, wall time measured around it. The canary runs its default families unless
--family is given. Printed: wall seconds per command, the engine's own phases (import, load,
generate, from the JSON), the load average before and after (the machine is shared: quote the
numbers with it), and the total against the goal of issue 10: under two minutes on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILDER = ROOT / "compat" / "verify" / "engine_side" / "oracle_models.py"
GOAL_S = 120.0


def default_engine_python() -> str:
    venv = os.environ.get("COMPAT_ENGINE_VENV") or Path.home() / ".cache" / "compat" / "engine-venv"
    return str(Path(venv) / "bin" / "python")


def build_pair(python: str, where: Path) -> tuple[Path, Path]:
    target, drafter = where / "llama-target", where / "llama-drafter"
    for args in (("target", "llama", str(target)), ("drafter", str(target), str(drafter), "oracle")):
        subprocess.run([python, str(BUILDER), *args], check=True, capture_output=True, text=True, timeout=600)
    return target, drafter


def timed(argv: list[str]) -> tuple[float, int, dict]:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "compat", *argv, "--json"], capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - start
    try:
        document = json.loads(proc.stdout)
    except json.JSONDecodeError:
        document = {"error": (proc.stdout + proc.stderr)[-2000:]}
    return wall, proc.returncode, document


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=default_engine_python(), help="the engine venv's interpreter")
    parser.add_argument("--family", action="append", default=[], help="canary family (default: the canary's defaults)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    load_before = os.getloadavg()
    totals = []
    with tempfile.TemporaryDirectory(prefix="compat-bench-verify-") as work:
        start = time.monotonic()
        target, drafter = build_pair(args.python, Path(work))
        print(f"pair built in {time.monotonic() - start:.1f} s (not counted)")
        engine = ["--engine", "vllm", "--python", args.python]
        for attempt in range(args.repeat):
            wall_v, code_v, verify = timed(["verify", str(target), str(drafter), *engine])
            families = [x for f in args.family for x in ("--family", f)]
            wall_c, code_c, canary = timed(["verify", "--canary", *engine, *families])
            totals.append(wall_v + wall_c)
            spec = (verify.get("throughput") or {}).get("seconds") or {}
            print(f"[{attempt + 1}] verify  {wall_v:6.1f} s  exit {code_v}  engine process {verify.get('seconds')} s "
                  f"(vLLM import {verify.get('import_seconds')} s); "
                  f"plain {spec.get('plain')}, speculative {spec.get('speculative')}; "
                  f"acceptance {(verify.get('acceptance') or {}).get('per_position')}")
            rows = canary.get("canary") or []
            print(f"[{attempt + 1}] canary  {wall_c:6.1f} s  exit {code_c}  engine process {canary.get('seconds')} s "
                  f"(vLLM import {canary.get('import_seconds')} s); "
                  + ", ".join(f"{r['family']}/{r['case']}: {r['status']} {r.get('seconds')}" for r in rows))
            if "error" in verify or "error" in canary:
                print(verify.get("error") or "", canary.get("error") or "", sep="\n")
    load_after = os.getloadavg()
    best = min(totals)
    print(f"total (verify + canary): best {best:.1f} s of {len(totals)}; goal < {GOAL_S:.0f} s: "
          f"{'met' if best < GOAL_S else 'NOT met'}")
    print(f"cores {os.cpu_count()}; load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    return 0 if best < GOAL_S else 1


if __name__ == "__main__":
    sys.exit(main())
