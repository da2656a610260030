#!/usr/bin/env python3
"""Fleet mode: N hosts take about the time of one (hosts run in parallel, --jobs).

Starts one real sshd on 127.0.0.1 listening on N ports (N hosts, each with its own login home whose ~/venv is
the engine venv), ships compat once to each (the warm-up run), then times `compat probe ... --host` on 1, 2, 4
and N hosts, interleaved, --repeat times each. All the "hosts" share this machine's cores: the remote work
(reading the engine's files) competes for them, which real hosts would not; the per-host time is printed too.

    python bench/bench_fleet.py --python ~/.cache/compat/engine-venv/bin/python --hosts 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "fleet"))

from ssh_server import start_sshd  # noqa: E402


def run(server, words: list[str]) -> float:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "compat", *words, "-q"], capture_output=True, text=True, env=server.env())
    if done.returncode != 0:
        raise SystemExit(f"compat {' '.join(words)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=str(Path.home() / ".cache/compat/engine-venv/bin/python"))
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--engine", action="store_true", help="probe --engine vllm (reads the whole engine) instead of listing it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="compat-bench-fleet-") as tmp:
        server = start_sshd(Path(tmp), count=args.hosts)
        try:
            for port in server.ports:
                server.trust(port)
            for name in server.hosts:
                (server.remote_home(name) / "venv").symlink_to(Path(args.python).parent.parent)
            probe = ["probe", "--python", "~/venv"] + (["--engine", "vllm"] if args.engine else [])
            sizes = sorted({1, 2, 4, args.hosts} & set(range(1, args.hosts + 1)))
            hosts = lambda n: [w for h in server.hosts[:n] for w in ("--host", h)]  # noqa: E731
            warm = run(server, [*probe, *hosts(args.hosts), "--jobs", str(args.hosts)])
            print(f"warm-up (compat shipped to {args.hosts} hosts): {warm:.2f} s")
            times: dict[int, list[float]] = {n: [] for n in sizes}
            for _ in range(args.repeat):
                for n in sizes:
                    times[n].append(run(server, [*probe, *hosts(n), "--jobs", str(n)]))
            one = statistics.median(times[1])
            print(f"compat {' '.join(probe)} --host ... ({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}):")
            print("| hosts | median | min | vs one host |")
            print("| --- | --- | --- | --- |")
            for n in sizes:
                median = statistics.median(times[n])
                print(f"| {n} | {median:.2f} s | {min(times[n]):.2f} s | {median / one:.2f}x |")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
