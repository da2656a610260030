"""The hostile-input harness for compat's outward surfaces: every surface is one function, every answer is judged
by the same rules.

A surface is a context manager `surface(rng, workdir) -> Case`, registered with `@surface(name)`: it draws one
hostile input from `rng` (a server that answers badly, a flag value, a file), sets up what the command needs
(a fake server on 127.0.0.1, files) and yields the compat command line to run. The harness runs it as a real
process (`python -m compat ...`) under an address-space limit and a deadline, and `judge` checks the answer:

- bounded time: the process ends before the case's deadline (a hang is killed and fails the case);
- bounded memory: it runs under RLIMIT_AS (MEMORY_LIMIT) and its peak RSS is reported;
- one clear error: an exit code the surface allows, no traceback, at most one `error:` line (exactly one when
  the exit code says an error), stderr short (a huge input is never echoed back), and with --json a JSON
  document on stdout whatever happened.

Adding a surface is one function in surfaces_*.py, decorated with @surface, and one import in
test_hostile_surfaces.py. The surfaces: doctor's flags (surfaces_doctor), verify --server (surfaces_verify),
doctor --launch LINE (surfaces_launch), compat explain's pasted logs (surfaces_explain), remote hosts that hang
(surfaces_fleet). A case may give stdin, a SIGINT after a while (a legitimate wait ended by the user), its own
error document schema and a rule of its own (`check`).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ContextManager, Iterator

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 2 << 30  # bytes of address space for one compat process
STDERR_LIMIT = 8000  # characters: one clear error, never a dumped input
ERROR_EXITS = {2, 3, 4}
ERROR_LINE = re.compile(r"^(compat [\w-]+: )?error\b")  # "error: ..." or argparse's "compat doctor: error: ..."  # usage, source (network), refused: each must say one error


@dataclass
class Case:
    argv: list[str]                         # after `python -m compat`
    what: str                               # the hostile input, for failure messages
    exits: set[int] = field(default_factory=lambda: {0, 1, 2, 3, 4})
    deadline: float = 60.0                  # seconds, start-up included
    env: dict[str, str] = field(default_factory=dict)
    json: bool = True                       # stdout is one JSON document
    error_schema: str = "compat.error/1"    # the JSON document's schema on an error exit (fleet: compat.fleet/1)
    stderr_errors: bool = True              # an error exit says exactly one `error:` line on stderr (a fleet's are per host, in its JSON)
    check: Callable[["Outcome"], str | None] | None = None  # the surface's own rule on top of these, or None
    stdin: Path | None = None               # a file (or FIFO) given as standard input; None: /dev/null
    interrupt_after: float | None = None    # send SIGINT after this many seconds (the user's Ctrl-C on a legit wait)
    quotes_input: bool = False              # stdout may quote the input, its tracebacks included (explain)


@dataclass
class Outcome:
    code: int | None                        # None: killed at the deadline
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mb: float


SurfaceFn = Callable[[random.Random, Path], ContextManager[Case]]
SURFACES: dict[str, SurfaceFn] = {}


def surface(name: str) -> Callable[[Callable[[random.Random, Path], Iterator[Case]]], SurfaceFn]:
    """Register a surface: a generator function (rng, workdir) that yields one Case (set-up before, clean-up after)."""
    def register(fn: Callable[[random.Random, Path], Iterator[Case]]) -> SurfaceFn:
        managed = contextlib.contextmanager(fn)
        SURFACES[name] = managed
        return managed
    return register


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_case(case: Case) -> Outcome:
    """`python -m compat ...` as a process of its own, killed at the deadline; its own peak RSS from wait4."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_API_KEY", "PYTHONBREAKPOINT"))}
    env.update({"COLUMNS": "100", "NO_COLOR": "1", **case.env})
    started = time.monotonic()
    stdin = open(case.stdin, "rb") if case.stdin is not None else subprocess.DEVNULL  # noqa: SIM115 (closed below)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "compat", *case.argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=stdin, cwd=ROOT, env=env, preexec_fn=_limit_memory)
    finally:
        if case.stdin is not None:
            stdin.close()
    chunks: dict[str, bytes] = {}
    readers = [threading.Thread(target=lambda n=name, f=stream: chunks.__setitem__(n, f.read()), daemon=True)
               for name, stream in (("out", proc.stdout), ("err", proc.stderr))]
    for reader in readers:
        reader.start()
    killed = threading.Event()
    timer = threading.Timer(case.deadline, lambda: (killed.set(), proc.kill()))
    timer.start()
    interrupt = threading.Timer(case.interrupt_after or 0, lambda: proc.send_signal(signal.SIGINT))
    if case.interrupt_after is not None:
        interrupt.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
        interrupt.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join(timeout=30)
    seconds = time.monotonic() - started
    code = None if killed.is_set() else proc.returncode
    return Outcome(code, chunks.get("out", b"").decode("utf-8", "replace"), chunks.get("err", b"").decode("utf-8", "replace"),
                   seconds, usage.ru_maxrss / 1024)


def judge(case: Case, outcome: Outcome) -> str | None:
    """What is wrong with the answer to a hostile input, or None."""
    where = f"[{case.what}] compat {' '.join(a if len(a) < 80 else a[:77] + '...' for a in case.argv)}"
    tail = outcome.stderr[-1500:]
    if outcome.code is None:
        return f"{where}: still running after {case.deadline:.0f} s (killed)\n{tail}"
    if "Traceback (most recent call last)" in outcome.stderr + ("" if case.quotes_input else outcome.stdout):
        return f"{where}: a traceback\n{tail}"
    if outcome.code not in case.exits:
        return f"{where}: exit {outcome.code}, expected one of {sorted(case.exits)}\n{tail}"
    if len(outcome.stderr) > STDERR_LIMIT:
        return f"{where}: {len(outcome.stderr)} characters on stderr (one clear error expected)\n{outcome.stderr[:600]}"
    errors = [line for line in outcome.stderr.splitlines() if ERROR_LINE.match(line)]
    if len(errors) > 1 or (case.stderr_errors and outcome.code in ERROR_EXITS and len(errors) != 1):
        return f"{where}: exit {outcome.code} with {len(errors)} error lines\n{tail}"
    if case.json:
        import json

        try:
            doc = json.loads(outcome.stdout)
        except ValueError:
            return f"{where}: --json printed no JSON document (exit {outcome.code})\n{outcome.stdout[:600]}\n{tail}"
        if outcome.code in ERROR_EXITS and (not isinstance(doc, dict) or doc.get("schema") != case.error_schema):
            return f"{where}: exit {outcome.code} without an error document ({case.error_schema})"
    if case.check is not None:
        problem = case.check(outcome)
        if problem is not None:
            return f"{where}: {problem}\n{tail}"
    return None


@dataclass
class Campaign:
    """Counts and the worst figures of one surface's run (printed for the README)."""
    name: str
    cases: int = 0
    exits: dict[int | None, int] = field(default_factory=dict)
    slowest: tuple[float, str] = (0.0, "")
    peak_rss_mb: float = 0.0

    def add(self, case: Case, outcome: Outcome) -> None:
        self.cases += 1
        self.exits[outcome.code] = self.exits.get(outcome.code, 0) + 1
        self.slowest = max(self.slowest, (outcome.seconds, case.what))
        self.peak_rss_mb = max(self.peak_rss_mb, outcome.peak_rss_mb)

    def line(self) -> str:
        return (f"{self.name}: {self.cases} hostile inputs, exits {dict(sorted(self.exits.items(), key=str))}, "
                f"slowest {self.slowest[0]:.1f} s ({self.slowest[1]}), peak RSS {self.peak_rss_mb:.0f} MB")


def campaign(name: str, count: int, workdir: Path, seed: int = 23) -> Campaign:
    """Run `count` hostile inputs on one surface; fail on the first answer that breaks a rule."""
    result = Campaign(name)
    for index in range(count):
        rng = random.Random(f"{seed}:{name}:{index}")
        case_dir = workdir / f"{index}"
        case_dir.mkdir(parents=True, exist_ok=True)
        with SURFACES[name](rng, case_dir) as case:
            outcome = run_case(case)
        problem = judge(case, outcome)
        assert problem is None, f"case {index} (seed {seed}): {problem}"
        result.add(case, outcome)
        shutil.rmtree(case_dir, ignore_errors=True)  # a passed case's inputs (logs of 100s of MB) are not kept
    return result
