"""`compat doctor --manifest` on a 500-resource repository, as whole processes; and hostile YAML, time and memory.

    python bench/bench_manifests.py            # 3 warm runs each: models on this machine, and models unchecked
    python bench/bench_manifests.py --runs 5

The repository is generated from tests/manifests/repo/ (every format: Kubernetes and Kustomize, LWS, KServe
InferenceService + ServingRuntime and LLMInferenceService, llm-d and production-stack values, Ray Serve, compose,
SkyPilot) with each resource renamed and its launch line made distinct (its own --port / max_model_len), so no
diagnosis is shared between resources: the worst case for the per-input memo. The releases (vLLM 0.10.1, 0.11.0,
0.32.0, SGLang 0.5.8) and their facts are cached by a priming run ("warm"). Models: a Kimi-K2 target and a
SpecForge drafter (bench/doctor_inputs.py) for every /models/... path (`--model-root`), or none (every model
check unchecked). Goal (issue 34): under 10 s warm.

Hostile inputs, each a process of its own (wall time and peak RSS): an alias bomb (10^9 nodes if expanded), a
recursive anchor, a 16 MiB file (the size limit), 100,000 nested brackets.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from doctor_inputs import write_pair  # noqa: E402

REPO = Path(__file__).resolve().parents[1] / "tests" / "manifests" / "repo"
SERVING_FILES = [p for p in sorted(REPO.rglob("*.yaml")) if "bad" not in p.parts]


def compat_command() -> list[str]:
    script = Path(sys.executable).with_name("compat")
    return [str(script)] if script.exists() else [sys.executable, "-m", "compat"]


def generate(root: Path, resources: int, distinct: bool = True) -> int:
    """Copies of the test repository's serving files, each resource renamed and (distinct) its line made its own."""
    made = copy = 0
    while made < resources:
        for source in SERVING_FILES:
            text = source.read_text()
            text = re.sub(r"(name: *\"?)([A-Za-z0-9-]+)", lambda m: f"{m.group(1)}{m.group(2)}-{copy}", text)
            if distinct:
                text = text.replace("--port 8000", f"--port {8000 + copy}").replace("max_model_len: 8192", f"max_model_len: {1024 + copy}")
                text = text.replace('"--port=8080"', f'"--port={9000 + copy}"').replace("- --enforce-eager", f"- --max-num-seqs={1 + copy}")
            out = root / f"{copy:03d}" / source.relative_to(REPO)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text)
            made += {"llm-d": 2}.get(source.parts[-2], 1)
        copy += 1
    return made


def run(argv: list[str]) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds of the process, its JSON)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-800:]}")
    return elapsed, cpu, json.loads(done.stdout)


def hostile(work: Path) -> list[tuple[str, float, float, str]]:
    cases = {
        "alias bomb (10^9 nodes)": "applications:\n- args:\n    llm_configs:\n    - model_loading_config: {model_source: /m}\n"
                                   "      engine_kwargs:\n        a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"        {c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi")),
        "recursive anchor": "applications:\n- args:\n    llm_configs:\n    - model_loading_config: {model_source: /m}\n"
                            "      engine_kwargs: &k\n        self: *k\n",
        "16 MiB file": "apiVersion: v1\nkind: ConfigMap\ndata:\n" + "".join(f"  k{i}: {'v' * 60}\n" for i in range(230_000)),
        "100,000 nested brackets": "a: " + "[" * 100_000 + "]" * 100_000 + "\n",
    }
    out = []
    for name, text in cases.items():
        path = work / "hostile" / (re.sub(r"\W+", "-", name) + ".yaml")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        code = ("import resource, sys, time; from compat.manifests.scan import scan; t = time.perf_counter(); "
                "s = scan([sys.argv[1]]); print(time.perf_counter() - t, "
                "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, [p.kind for p in s.problems])")
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=600)
        seconds, rss, kinds = done.stdout.split(" ", 2)
        out.append((f"{name} ({path.stat().st_size / 2**20:.1f} MiB)", float(seconds), float(rss), kinds.strip()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--resources", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="compat-bench-manifests-"))
    try:
        target, drafter = write_pair(work / "models")
        models = work / "model-root"
        for name in {m for p in SERVING_FILES for m in re.findall(r"/models/([\w.-]+)", p.read_text())}:
            shutil.copytree(drafter if "drafter" in name or "eagle3" in name else target, models / name)
        results = {}
        for lines in ("distinct", "repeated"):
            repo = work / f"repo-{lines}"
            made = generate(repo, args.resources, distinct=lines == "distinct")
            print(f"{made} serving resources in {sum(1 for _ in repo.rglob('*.yaml'))} files, launch lines {lines}")
            base = [*compat_command(), "doctor", "--manifest", str(repo), "--json", "--layer-ids-convention", "output-of"]
            for models_mode, argv in (("models here", [*base, "--model-root", f"/models={models}"]), ("models unchecked", base)):
                name = f"lines {lines}, {models_mode}"
                _, _, answer = run(argv)  # priming: releases and facts cached
                assert len(answer["servings"]) >= args.resources, len(answer["servings"])
                times = []
                for _ in range(args.runs):
                    elapsed, cpu, again = run(argv)
                    assert again["servings"] == answer["servings"]
                    times.append((elapsed, cpu))
                    print(f"{name:36} warm {elapsed:6.2f} s wall, {cpu:6.2f} s CPU ({len(answer['servings'])} containers)",
                          flush=True)
                results[name] = times
        for name, seconds, rss, kinds in hostile(work):
            print(f"hostile: {name:36} {seconds:6.2f} s  peak RSS {rss:6.0f} MiB  problems {kinds}")
        print(f"\nload average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
        for name, times in results.items():
            walls, cpus = [t[0] for t in times], [t[1] for t in times]
            print(f"{name:36} median {statistics.median(walls):6.2f} s wall (min {min(walls):.2f}), "
                  f"CPU {statistics.median(cpus):6.2f} s  ({len(times)} runs)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
