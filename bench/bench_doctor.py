"""`compat doctor` over a range of releases, as whole processes: the warm figure docs/performance.md keeps.

    python bench/bench_doctor.py                       # vllm '>=0.10,<0.34' (39 releases), best of 5 warm runs a pair
    python bench/bench_doctor.py --runs 9 --facts-cold # and with the facts cache emptied before each run
    python bench/bench_doctor.py --fully-cold          # and with an empty release cache (downloads ~1.5 GB)
    python bench/bench_doctor.py --one 0.32.0 [--python PY]   # one release and a launch line (issue 38: warm <= 1 s;
                                                       # with PY, the preflight: the release's own build, <= 20 s)

The command is the one a user types, for two pairs written by bench/doctor_inputs.py (a Kimi-K2 target):

    compat doctor TARGET DRAFTER --engine vllm --releases '>=0.10,<0.34' --json

- "settled": a SpecForge EAGLE-3 drafter, its layer ids settled by its trainer's fingerprint: a diagnosis a release;
- "asks": the same drafter under vLLM's layer names (layers.0.*), which no fingerprint settles: doctor asks
  --layer-ids-convention and reads the drafter both ways, three diagnoses a release (issue 42's profile: the
  readings of an ask were each diagnosed in full).

warm: the releases, their facts and the in-memory patches cached (one priming run). The machine is shared: each run
is timed start to exit and the best of --runs is the figure (the median and the load average are printed beside it);
the goal (issue 42) is a best warm run under 1.5 s for each pair. facts cold: the facts cache emptied before each run
(every release probed, in parallel). Facts go to a temporary COMPAT_FACTS_DIR, so the shared cache is neither used
nor changed; the doctor's answer is checked to be the same in every run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from doctor_inputs import write_asking_pair, write_pair  # noqa: E402

GOAL_SECONDS = 1.5


def compat_command() -> list[str]:
    script = Path(sys.executable).with_name("compat")
    return [str(script)] if script.exists() else [sys.executable, "-m", "compat"]


def run(argv: list[str], env: dict, cwd: Path) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: some release does not work, which is an answer
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-600:]}")
    return elapsed, json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--releases", default=">=0.10,<0.34")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per pair and mode; the best is the figure")
    ap.add_argument("--offline", action="store_true", help="pass --offline (the index listing from the cache)")
    ap.add_argument("--facts-cold", action="store_true", help="also time runs with the facts cache emptied")
    ap.add_argument("--fully-cold", action="store_true", help="also time an empty release cache (downloads)")
    ap.add_argument("--only", choices=("settled", "asks"), action="append", help="only this pair")
    ap.add_argument("--one", metavar="VERSION", help="one vLLM release with a launch line (the release-validation check)")
    ap.add_argument("--python", metavar="PY", help="with --one: also time the preflight in this engine interpreter")
    args = ap.parse_args()
    if args.one:
        return one_release(args)

    work = Path(tempfile.mkdtemp(prefix="compat-bench-doctor-"))
    facts_dir = work / "facts"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # an installed package has bytecode
    env["COMPAT_FACTS_DIR"] = str(facts_dir)
    pairs = {"settled": write_pair(work / "models"), "asks": write_asking_pair(work / "models")}
    results: dict[str, list[float]] = {}
    try:
        for name, (target, drafter) in pairs.items():
            if args.only and name not in args.only:
                continue
            tail = [str(target), str(drafter), "--engine", "vllm", "--releases", args.releases, "--json",
                    *(["--offline"] if args.offline else [])]
            argv = [*compat_command(), "doctor", *tail]
            _, reference = run(argv, env, work)  # priming: facts and in-memory patches cached
            readings = sum(len(row.get("answers") or {}) for row in reference.get("rows", []))
            print(f"{name}: {len(reference.get('rows', []))} releases, {readings} readings of an ask", flush=True)
            for mode in ("warm", "facts cold") if args.facts_cold else ("warm",):
                times = []
                for _ in range(args.runs):
                    if mode == "facts cold":
                        shutil.rmtree(facts_dir, ignore_errors=True)
                    elapsed, answer = run(argv, env, work)
                    assert answer == reference, f"{name} {mode}: the doctor's answer differs"
                    times.append(elapsed)
                    print(f"  {mode:10} {elapsed:6.2f} s", flush=True)
                results[f"{name}, {mode}"] = times
            if args.fully_cold:
                elapsed, answer = run([*argv, "--cache-dir", str(work / "cache")], env, work)
                assert answer == reference
                results[f"{name}, fully cold (empty release cache)"] = [elapsed]
        print(f"\n{args.releases} on vllm; load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
              f"on {os.cpu_count()} cores")
        for name, times in results.items():
            goal = f"  (goal {GOAL_SECONDS} s: {'met' if min(times) < GOAL_SECONDS else 'NOT met'})" if "warm" in name else ""
            print(f"{name:44} best {min(times):6.2f} s  median {statistics.median(times):6.2f} s  ({len(times)} runs){goal}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def one_release(args: argparse.Namespace) -> None:
    """doctor on one release with a launch line: warm (facts cached) without a preflight, and with one when --python."""
    work = Path(tempfile.mkdtemp(prefix="compat-bench-doctor-"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["COMPAT_FACTS_DIR"] = str(work / "facts")
    try:
        target, drafter = write_pair(work / "models")
        spec = json.dumps({"method": "eagle3", "model": str(drafter), "num_speculative_tokens": 3})
        base = [*compat_command(), "doctor", str(target), str(drafter), "--engine", f"vllm=={args.one}", "--json",
                "--offline", "--launch", f"vllm serve {target} --speculative-config '{spec}'"]
        modes = {"doctor, warm, no preflight": base}
        if args.python:
            modes["doctor, warm, preflight"] = [*base, "--python", args.python, "--platform", "cpu"]
        run(base, env)  # priming: the release's facts
        for name, argv in modes.items():
            times = []
            for _ in range(args.runs):
                elapsed, answer = run(argv, env)
                times.append(elapsed)
                print(f"{name:32} {elapsed:7.2f} s  (preflight: {json.dumps(answer.get('preflight', {}).get('ran'))})",
                      flush=True)
            print(f"{name:32} median {statistics.median(times):6.2f} s  min {min(times):6.2f} s  ({len(times)} runs)")
        print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
