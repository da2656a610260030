"""compat's own overhead per request in a concurrency sweep, against the server's time per request, at concurrency 16.

    python bench/bench_sweep.py [--url URL | --python ENGINE_PY] [--max-tokens M] [--repeat R]

compat's side: `compat verify --server URL --concurrency 16 --format json` as a user runs it (a child process),
against the modelled vLLM 0.32.0 server of tests/verify, which answers at once in this process: all the child's CPU
time is compat's (streaming, timing, parsing, counters, the document). Two runs, 16 and 80 requests, R times each
(interleaved); the difference over 64 requests is the cost per request, the fixed costs (interpreter, asking the
server, reading the release's names) cancelled out.
The server's side: the same level against a real server (--url, else a real `vllm serve` of tests/engine's tiny chat
model from the engine venv, --python): its wall time x 16 / requests, the time one request takes at concurrency 16.
Printed: both, and compat's share.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_verify_server import ENV, default_engine_python, modelled_server, real_server  # noqa: E402

LEVEL = 16


def run(url: str, requests: int, max_tokens: int) -> tuple[float, float, dict]:
    """(compat's CPU seconds, wall seconds, the document) of one sweep level."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "compat", "verify", "--server", url, "--concurrency", str(LEVEL),
                           "--num-prompts", str(requests), "--max-tokens", str(max_tokens), "--format", "json"],
                          capture_output=True, text=True, cwd=ROOT, env=ENV)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if not proc.stdout.strip() or "levels" not in proc.stdout:
        raise SystemExit(f"the sweep failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, json.loads(proc.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a real server for the server's side (default: a real vllm serve, tiny model)")
    parser.add_argument("--python", type=Path, default=default_engine_python())
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="compat-bench-sweep-") as tmp:
        modelled = modelled_server(stack)
        run(modelled, 16, args.max_tokens)  # the release's names into the facts cache
        small, large = [], []
        for _ in range(args.repeat):
            small.append(run(modelled, 16, args.max_tokens)[0])
            large.append(run(modelled, 80, args.max_tokens)[0])
        per_request = (statistics.median(large) - statistics.median(small)) / 64
        url = args.url.rstrip("/") if args.url else real_server(stack, args.python, Path(tmp))
        _, wall, doc = run(url, LEVEL, args.max_tokens)
        level = doc["levels"][0]
        server_per_request = level["requests"]["seconds"] * LEVEL / max(1, level["requests"]["sent"])
        tokens = level["requests"]["completion_tokens"] / max(1, level["requests"]["sent"])
    print(f"compat's side (modelled server answering at once, {args.max_tokens} tokens a request, concurrency {LEVEL}): "
          f"CPU {statistics.median(small):.3f} s for 16 requests, {statistics.median(large):.3f} s for 80 (medians of "
          f"{args.repeat}): {1000 * per_request:.2f} ms per request")
    print(f"the server's side ({url}): {level['requests']['sent']} requests at concurrency {LEVEL} in "
          f"{level['requests']['seconds']:.2f} s, {tokens:.0f} tokens each: {server_per_request:.2f} s per request")
    print(f"compat's overhead per request: {100 * per_request / server_per_request:.3f}% of the server's time "
          f"(goal: under 1%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
