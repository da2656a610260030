"""Probe time per release tree, against the engine's own import-based answer.

    python bench/bench_probe.py                       # a sample of vLLM and SGLang releases
    python bench/bench_probe.py --all                 # every release the matrix covers
    python bench/bench_probe.py --python VENV/bin/python   # also time `api_server --help` there

For each release: the first fetch into an empty cache (download + extract), then the probe
of the cached tree (a fresh EngineTree each run, files in the OS cache; median of --runs), with the
facts cache off: this is the time of the probes themselves, what a release costs the first time.
Whole processes with the facts cache (what a user waits for) are bench_startup.py and bench_doctor.py.
Goal (issue 2): under 0.3 s for a cached tree.
"""

from __future__ import annotations

import os

os.environ["COMPAT_FACTS_CACHE"] = "off"  # time the probes, not the facts cache

import argparse
import statistics
import subprocess
import tempfile
import time

from packaging.version import Version

from compat.report import build_report
from compat.sources.released import fetch_release, list_releases

SAMPLE = {"vllm": ["0.10.0", "0.11.0", "0.17.1", "0.18.0", "0.22.0", "0.32.0", "0.33.0"],
          "sglang": ["0.4.4.post2", "0.5.4.post2", "0.5.8", "0.5.13", "0.5.19", "0.5.23"]}
FIRST = {"vllm": "0.10.0", "sglang": "0.4.4"}


def time_release(engine: str, version: str, cache: str, runs: int) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    tree = fetch_release(engine, f"=={version}", cache_dir=cache, progress=False)
    fetch = time.perf_counter() - t0
    probe_times = []
    for _ in range(runs):
        fresh = fetch_release(engine, f"=={version}", cache_dir=cache, progress=False, offline=True)
        t0 = time.perf_counter()
        build_report(fresh)
        probe_times.append(time.perf_counter() - t0)
    return fetch, statistics.median(probe_times), len(tree.files())


def time_engine_help(python: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([python, "-m", "vllm.entrypoints.openai.api_server", "--help"], capture_output=True, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all", action="store_true", help="every release from vLLM 0.10.0 and SGLang 0.4.4")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--python", help="an interpreter with vLLM installed, to time its own --help")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="compat-bench-") as cache:
        rows = []
        for engine in ("vllm", "sglang"):
            versions = SAMPLE[engine]
            if args.all:
                versions = [v for v in list_releases(engine) if Version(v) >= Version(FIRST[engine])]
            for version in versions:
                fetch, probe, nfiles = time_release(engine, version, cache, args.runs)
                rows.append((engine, version, nfiles, fetch, probe))
                print(f"{engine:7} {version:12} {nfiles:5} files  first fetch {fetch:6.2f} s  probe (cached) {probe * 1000:6.0f} ms", flush=True)
        probes = [r[4] for r in rows]
        print(f"\nprobe of a cached tree: median {statistics.median(probes) * 1000:.0f} ms, max {max(probes) * 1000:.0f} ms over {len(rows)} releases")
        if args.python:
            engine_help = time_engine_help(args.python)
            print(f"engine's own answer (python -m vllm.entrypoints.openai.api_server --help): {engine_help:.2f} s "
                  f"= {engine_help / statistics.median(probes):.0f}x the median probe")


if __name__ == "__main__":
    main()
