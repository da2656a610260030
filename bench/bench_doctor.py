"""`compat doctor` over a range of releases, as whole processes: warm, facts cold, and fully cold.

    python bench/bench_doctor.py                       # vllm '>=0.10,<0.34' (39 releases), 3 runs each
    python bench/bench_doctor.py --fully-cold          # also with an empty release cache (downloads ~1.5 GB)
    python bench/bench_doctor.py --one 0.32.0 [--python PY]   # one release and a launch line (issue 38: warm <= 1 s;
                                                       # with PY, the preflight: the release's own build, <= 20 s)

The command is the one a user types, with a Kimi-K2 target and a SpecForge drafter written by
bench/doctor_inputs.py:

    compat doctor TARGET DRAFTER --engine vllm --releases '>=0.10,<0.34' --json

- warm: the releases and their facts are cached (one priming run first);
- facts cold: the facts cache emptied before each run, the releases kept (every release is probed);
- fully cold (--fully-cold): a new, empty --cache-dir (downloads every release, then probes it);
- "memo": the same through bench/doctor_memo_shim.py, which memoises the doctor's in-memory patching in
  the facts cache (what the doctor would gain from the change the shim shows); "memo + parallel" also
  probes the releases missing from the facts cache in parallel processes first (`probe_missing`).
Facts go to a temporary COMPAT_FACTS_DIR, so the shared cache is neither used nor changed; the doctor's
output is checked to be the same in every mode. Goal (issue 14): warm <= 2 s, cold bounded by downloads.
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

from doctor_inputs import write_pair  # noqa: E402

SHIM = Path(__file__).resolve().parent / "doctor_memo_shim.py"


def compat_command() -> list[str]:
    script = Path(sys.executable).with_name("compat")
    return [str(script)] if script.exists() else [sys.executable, "-m", "compat"]


def run(argv: list[str], env: dict) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: some release does not work, which is an answer
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-600:]}")
    return elapsed, json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--releases", default=">=0.10,<0.34")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--offline", action="store_true", help="pass --offline (the index listing from the cache)")
    ap.add_argument("--fully-cold", action="store_true", help="also time an empty release cache (downloads)")
    ap.add_argument("--only", action="append", help="only this mode: doctor, 'doctor + memo', 'doctor + memo + parallel'")
    ap.add_argument("--one", metavar="VERSION", help="one vLLM release with a launch line (the release-validation check)")
    ap.add_argument("--python", metavar="PY", help="with --one: also time the preflight in this engine interpreter")
    args = ap.parse_args()
    if args.one:
        return one_release(args)

    work = Path(tempfile.mkdtemp(prefix="compat-bench-doctor-"))
    facts_dir = work / "facts"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["COMPAT_FACTS_DIR"] = str(facts_dir)
    target, drafter = write_pair(work / "models")
    tail = [str(target), str(drafter), "--engine", "vllm", "--releases", args.releases, "--json",
            *(["--offline"] if args.offline else [])]
    commands = {"doctor": [*compat_command(), "doctor", *tail], "doctor + memo": [sys.executable, str(SHIM), "doctor", *tail],
                "doctor + memo + parallel": ["env", "COMPAT_BENCH_PARALLEL=1", sys.executable, str(SHIM), "doctor", *tail]}
    if args.only:
        commands = {name: argv for name, argv in commands.items() if name in args.only}
    try:
        results: dict[str, list[float]] = {}
        reference = None
        for name, argv in commands.items():
            shutil.rmtree(facts_dir, ignore_errors=True)
            _, answer = run(argv, env)  # priming: facts (and, for memo, the patched text) cached
            reference = reference or answer
            assert answer == reference, f"{name}: the doctor's answer differs"
            for mode in ("warm", "facts cold"):
                times = []
                for _ in range(args.runs):
                    if mode == "facts cold":
                        shutil.rmtree(facts_dir, ignore_errors=True)
                    elapsed, answer = run(argv, env)
                    assert answer == reference, f"{name} {mode}: the doctor's answer differs"
                    times.append(elapsed)
                    print(f"{name:26} {mode:10} {elapsed:7.2f} s", flush=True)
                results[f"{name}, {mode}"] = times
            shutil.rmtree(facts_dir, ignore_errors=True)
            run(argv, env)  # leave it warm for the next command's comparison
        if args.fully_cold:
            cache = work / "cache"
            elapsed, answer = run([*compat_command(), "doctor", *tail, "--cache-dir", str(cache)], env)
            assert answer == reference
            results["doctor, fully cold (empty release cache)"] = [elapsed]
        rows = len(reference.get("rows", []))
        print(f"\n{rows} releases ({args.releases}); load average at the end: "
              f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
        for name, times in results.items():
            print(f"{name:48} median {statistics.median(times):6.2f} s  min {min(times):6.2f} s  ({len(times)} runs)")
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
