"""Whole processes, side by side: `compat probe --engine vllm==X --json` against vLLM's own `--help`.

    python bench/bench_startup.py                                  # compat alone
    python bench/bench_startup.py --python ~/.cache/compat/engine-venv/bin/python   # and vLLM's --help there

What a user waits for, start to exit, on this machine: each command is run as a fresh process, the
runs interleaved round by round (compat, compat, ..., vLLM's --help) so that both see the same load, and
the medians compared. Measured:
- `python -c pass` with the same interpreter (the floor: interpreter and site start-up);
- `compat probe --engine vllm==X --json`, warm: the release and its facts are cached (one priming run);
- the same with the facts cache emptied before each run (the release is cached; the probes run);
- `python -m vllm.entrypoints.openai.api_server --help` in the engine's venv (vLLM imports itself).
Facts go to a temporary COMPAT_FACTS_DIR, so the shared cache is neither used nor changed. The child
processes may write bytecode (PYTHONDONTWRITEBYTECODE is dropped), as an installed package has it.
The machine is shared: the best run is the figure (what the command costs when nothing else runs), the median beside
it, and the CPU time of the same runs (user + system: what the command costs however busy the machine is). Goal (issue 42): warm under 80 ms, >= 100x vLLM's --help (issue 14's was 0.1 s and 75x).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def compat_command() -> list[str]:
    script = Path(sys.executable).with_name("compat")
    return [str(script)] if script.exists() else [sys.executable, "-m", "compat"]


CPU: dict[int, list[float]] = {}  # id of a list of wall times -> the CPU times (user + system) of the same runs


def timed(argv: list[str], env: dict, into: list[float] | None = None) -> float:
    """The run's wall time (appended to `into`, its CPU time beside it in CPU: on a busy machine the wall time says
    how busy it was, the CPU time what the command costs)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-400:]}")
    if into is not None:
        into.append(elapsed)
        CPU.setdefault(id(into), []).append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return elapsed


GOAL_MS = 80


def summary(name: str, times: list[float]) -> str:
    cpu = CPU.get(id(times), [])
    return (f"{name:58} best {min(times) * 1000:7.0f} ms  median {statistics.median(times) * 1000:7.0f} ms  "
            f"({len(times)} runs)" + (f"; CPU best {min(cpu) * 1000:.0f} ms, median {statistics.median(cpu) * 1000:.0f} ms"
                                      if cpu else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", default="0.32.0", help="the vLLM release to probe (cached beforehand)")
    ap.add_argument("--python", help="the engine venv's interpreter, to time vLLM's own --help side by side")
    ap.add_argument("--rounds", type=int, default=5, help="rounds; each runs compat --per-round times and --help once")
    ap.add_argument("--per-round", type=int, default=10)
    args = ap.parse_args()

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    facts_dir = Path(tempfile.mkdtemp(prefix="compat-bench-facts-"))
    env["COMPAT_FACTS_DIR"] = str(facts_dir)
    probe = [*compat_command(), "probe", "--engine", f"vllm=={args.version}", "--json"]
    engine_help = [args.python, "-m", "vllm.entrypoints.openai.api_server", "--help"] if args.python else None
    if engine_help and not Path(args.python).exists():
        print(f"note: {args.python} does not exist (the engine venv is missing or being built): timing compat alone")
        engine_help = None
    try:
        timed(probe, env)  # fetch if needed, write bytecode, fill the facts cache
        bare, warm, cold, helps = [], [], [], []
        for round_number in range(args.rounds):
            for _ in range(args.per_round):
                timed([sys.executable, "-c", "pass"], env, bare)
                timed(probe, env, warm)
                shutil.rmtree(facts_dir, ignore_errors=True)
                timed(probe, env, cold)
                timed(probe, env)  # warm again for the next round
            if engine_help:
                timed(engine_help, env, helps)
            print(f"round {round_number + 1}/{args.rounds}: compat warm median {statistics.median(warm) * 1000:.0f} ms"
                  + (f", vLLM --help {helps[-1]:.2f} s" if helps else ""), flush=True)
        print(f"\nload average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
        print(summary(f"{sys.executable} -c pass", bare))
        print(summary(f"compat probe --engine vllm=={args.version} --json (warm)", warm)
              + f"  (goal {GOAL_MS} ms: {'met' if min(warm) * 1000 < GOAL_MS else 'NOT met'})")
        print(summary(f"compat probe --engine vllm=={args.version} --json (facts cold)", cold))
        print(f"compat's own share of a warm probe (best runs, less `python -c pass`): {(min(warm) - min(bare)) * 1000:.0f} ms"
              f" wall, {(min(CPU[id(warm)]) - min(CPU[id(bare)])) * 1000:.0f} ms CPU")
        if helps:
            print(summary("python -m vllm.entrypoints.openai.api_server --help", helps))
            ratio = statistics.median(helps) / statistics.median(warm)
            best = min(helps) / min(warm)
            print(f"\nvLLM --help / compat probe (warm): {ratio:.0f}x (medians of interleaved runs), {best:.0f}x (best runs)")
    finally:
        shutil.rmtree(facts_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
