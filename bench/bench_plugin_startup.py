"""What the plugin's start-up hook costs every interpreter of the serving venv: `python -c pass` with and
without the plugin installed, and the engine module's first import with the hook on and off.

    python bench/bench_plugin_startup.py                       # two fresh venvs with a tiny vLLM-shaped engine
    python bench/bench_plugin_startup.py --python ENGINE_PY    # also the real engine venv (the plugin is
                                                               # installed there for the run, then removed)

Each command runs as a fresh process; the runs are interleaved (with, without, with, without, ...) so both
see the same load on this shared machine, and the medians are compared. Measured:
- `python -c pass` in a venv holding the plugin vs in an identical venv without it: what pip, the engine's
  workers and every unrelated script pay at start-up (the .pth runs; the runtime is not imported);
- `python -c "import <the patched module>"` with the hook on vs `COMPAT_PLUGIN_DISABLE=1` (the runtime
  imported, plugin.json read, the module's files hashed and the patched source compiled): what an engine
  process pays once, at its first import of the engine.
Bytecode may be written (as in an installed venv), and one warm-up run of each goes first.
Goal (issue 23): a few milliseconds at most per interpreter start.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "plugin"))
sys.path.insert(0, str(HERE.parent / "tests" / "patches"))

import plugin_env  # noqa: E402  (the tests' fake vLLM venv)

PATCH = "vllm-cpu-attn-block16"
MODULE = "vllm.v1.attention.backends.cpu_attn"


def timed(argv: list[str], env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds user+sys) of one process: CPU time is what the hook adds, and barely moves
    with the load of a shared machine; wall time is what a user waits."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd="/")
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err.decode()[-400:]}")
    return elapsed, usage.ru_utime + usage.ru_stime


def report(label: str, ta: list[tuple[float, float]], tb: list[tuple[float, float]]) -> None:
    def med(times, i):
        return statistics.median(t[i] for t in times) * 1000

    print(f"{label:58} wall {med(ta, 0):7.1f} / {med(tb, 0):7.1f} ms ({med(ta, 0) - med(tb, 0):+6.2f})   "
          f"cpu {med(ta, 1):7.1f} / {med(tb, 1):7.1f} ms ({med(ta, 1) - med(tb, 1):+6.2f})   {len(ta)} rounds, with / without")


def compare(label: str, a: tuple[list[str], dict], b: tuple[list[str], dict], rounds: int) -> None:
    timed(*a), timed(*b)  # warm-up (bytecode, page cache)
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(timed(*a))
        tb.append(timed(*b))
    report(label, ta, tb)


def compat(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "compat", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"compat {' '.join(args)} failed: {done.stderr[-400:]}")


def pth_of(python: str) -> Path:
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return Path(site) / "compat_plugin_vllm.pth"


def with_and_without_pth(label: str, python: str, env: dict, rounds: int) -> None:
    """`python -c pass` in one venv, its .pth moved aside and back between runs: the hook is the only difference."""
    pth = pth_of(python)
    aside = pth.with_name(".compat_plugin_vllm.pth.bench")
    timed([python, "-c", "pass"], env)  # warm-up
    ta, tb = [], []
    try:
        for _ in range(rounds):
            ta.append(timed([python, "-c", "pass"], env))
            os.replace(pth, aside)
            try:
                tb.append(timed([python, "-c", "pass"], env))
            finally:
                os.replace(aside, pth)
    finally:
        if aside.exists():
            os.replace(aside, pth)
    report(label, ta, tb)


def hook_alone(python: str, rounds: int = 2000) -> None:
    """The .pth line itself, timed in-process (compiling and running it; no process start-up noise)."""
    line = pth_of(python).read_text()
    started = time.perf_counter()
    for _ in range(rounds):
        exec(compile(line, "compat_plugin_vllm.pth", "exec"), {})
    print(f"{'the .pth line alone (compile + run, in-process)':58} {(time.perf_counter() - started) / rounds * 1000:.3f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--python", help="a real engine venv's python: measured too (plugin installed for the run, then removed)")
    args = ap.parse_args()
    if args.python:
        args.python = str(Path(args.python).absolute())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COMPAT_PLUGIN"))}
    off = {**env, "COMPAT_PLUGIN_DISABLE": "1"}
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="compat-bench-plugin-") as tmp:
        python = plugin_env.make_venv(Path(tmp) / "venv")
        plugin_env.write_fake_vllm(plugin_env.site_packages(python))
        compat("plugin", "install", "--engine", "vllm", "--python", str(python), "--select", PATCH)
        hook_alone(str(python))
        with_and_without_pth("python -c pass (a venv with a tiny vLLM-shaped engine)", str(python), env, args.rounds)
        compare(f"python -c 'import {MODULE}' (hook on / off)",
                ([str(python), "-c", f"import {MODULE}"], env), ([str(python), "-c", f"import {MODULE}"], off), args.rounds)
    if args.python:
        where = ("--engine", "vllm", "--python", args.python)
        compat("plugin", "install", *where, "--select", PATCH)
        try:
            with_and_without_pth("python -c pass (the real engine venv)", args.python, env, args.rounds)
            compare(f"python -c 'import {MODULE}' (engine venv, hook on / off)",
                    ([args.python, "-c", f"import {MODULE}"], env), ([args.python, "-c", f"import {MODULE}"], off),
                    max(5, args.rounds // 8))
        finally:
            compat("plugin", "remove", *where)


if __name__ == "__main__":
    main()
