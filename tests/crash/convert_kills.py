"""The `compat convert ckpt` crash campaign: kill a conversion at a write-like syscall (or after a
delay), look at what it left, run the command again, look again. Used by test_convert_crash.py and
bench/bench_crash_convert.py.

strace keeps one `when=` counter per syscall, not one across the set (strace 6.1: with the whole set
injected at when=N, the process dies at whichever syscall reaches its N-th call first, so a rename
made once is never the kill point). Every instant is reached by injecting one syscall at a time:
(rename, 1), (write, 1), (write, 2), ... for every call a normal run makes.

After each kill: SRC unchanged; DST absent or exactly the complete output (with --force: exactly the
old DST or the new one, never absent); then the next run (the same command, not killed) removes every
leftover beside DST and says so on stderr, and leaves DST complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import strace_kill

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checkpoints"))
from ckpt_builders import write_drafter  # noqa: E402

CLI = [sys.executable, "-c", "import sys; from compat.cli import main; sys.exit(main(sys.argv[1:]))"]


def tree(path: Path) -> dict[str, bytes] | None:
    if not path.exists():
        return None
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def digest(path: Path) -> str:
    h = hashlib.sha256()
    for name, data in (tree(path) or {}).items():
        h.update(name.encode() + b"\0" + data)
    return h.hexdigest()


def leftovers(parent: Path, dst: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{dst.name}.compat-"))


@dataclass
class Outcome:
    point: str  # "syscall N" or "after X s"
    force: bool
    killed: bool
    src_changed: bool
    dst: str  # what the killed run left as DST: absent | new | old | partial
    leftovers: list[str]  # what it left beside DST
    said: list[str] = field(default_factory=list)  # the next run's recovery lines
    unexplained: list[str] = field(default_factory=list)  # leftovers the next run did not name
    dst_after: str = ""  # DST after the next run
    leftovers_after: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        allowed = ("new", "old") if self.force else ("absent", "new")
        found = []
        if self.src_changed:
            found.append("SRC changed")
        if self.dst not in allowed:
            found.append(f"DST {self.dst} after the kill")
        if self.unexplained:
            found.append(f"the next run did not name {self.unexplained}")
        if self.leftovers_after:
            found.append(f"leftovers after the next run: {self.leftovers_after}")
        if self.dst_after != "new":
            found.append(f"DST {self.dst_after} after the next run")
        return found


class Scenario:
    """One conversion to kill: SRC, DST, the complete output it must produce and (--force) the old DST."""

    def __init__(self, root: Path, *, force: bool, extra: tuple[str, ...] = ()):
        self.root, self.force = root, force
        root.mkdir(parents=True, exist_ok=True)
        self.src = write_drafter(root / "src", "eagle")
        (self.src / "tokenizer.json").write_text('{"model": "x"}')
        self.dst = root / "out"
        self.args = ["convert", "ckpt", str(self.src), str(self.dst), "--to", "vllm", *extra, *(["--force"] if force else [])]
        self.src_digest = digest(self.src)
        self.new = self._reference("reference-new", ["--to", "vllm", *extra])
        self.old = self._reference("reference-old", ["--to", "eagle"]) if force else None

    def _reference(self, name: str, to: list[str]) -> dict[str, bytes]:
        out = self.root / name
        if not out.exists():
            code, _, err = in_process(["convert", "ckpt", str(self.src), str(out), *to])
            assert code == 0, err
        return tree(out)

    @property
    def argv(self) -> list[str]:
        return [*CLI, *self.args, "--json"]  # --json: one stdout write, so kill points land on the files

    def reset(self) -> None:
        shutil.rmtree(self.dst, ignore_errors=True)
        for name in leftovers(self.root, self.dst):
            shutil.rmtree(self.root / name)
        if self.force:
            shutil.copytree(self.root / "reference-old", self.dst)

    def state(self) -> str:
        now = tree(self.dst)
        if now is None:
            return "absent"
        return "new" if now == self.new else "old" if now == self.old else "partial"

    def write_calls(self) -> dict[str, int]:
        """How many calls of each write-like syscall a normal run makes."""
        self.reset()
        counts = write_call_counts(self.argv)
        self.reset()
        return counts

    def judge(self, point: str, proc) -> Outcome:
        outcome = Outcome(point, self.force, strace_kill.was_killed(proc), digest(self.src) != self.src_digest, self.state(),
                          leftovers(self.root, self.dst))
        _, _, err = in_process(self.args)  # the next run: the same command, not killed
        outcome.said = [line for line in err.splitlines() if line.startswith("recovery: ")]
        outcome.unexplained = [name for name in outcome.leftovers if not any(name in line for line in outcome.said)]
        outcome.dst_after = self.state()
        outcome.leftovers_after = leftovers(self.root, self.dst)
        return outcome


def in_process(args: list[str]) -> tuple[int, str, str]:
    from compat.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def write_call_counts(argv: list[str]) -> dict[str, int]:
    names = ",".join(strace_kill.WRITE_SYSCALLS)
    fd, out = tempfile.mkstemp(prefix="compat-strace-count-")
    os.close(fd)
    try:
        subprocess.run(["strace", "-f", "-qq", "-c", "-o", out, "-e", f"trace={names}", *argv], capture_output=True,
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, timeout=300)
        lines = open(out).read().splitlines()
    finally:
        os.unlink(out)
    counts = {}
    for line in lines:  # % time, seconds, usecs/call, calls, [errors,] syscall
        fields = line.split()
        if fields and fields[-1] in strace_kill.WRITE_SYSCALLS and fields[3].isdigit():
            counts[fields[-1]] = int(fields[3])
    return counts


def every_point(counts: dict[str, int]) -> list[tuple[str, int]]:
    """Every call of every write-like syscall, then one past the last (a run that must complete)."""
    points = [(name, k) for name, n in sorted(counts.items()) for k in range(1, n + 1)]
    name = max(counts, key=counts.get)
    return points + [(name, counts[name] + 1)]


def kill_at(scenario: Scenario, points: list[tuple[str, int]]) -> list[Outcome]:
    outcomes = []
    for name, k in points:
        scenario.reset()
        proc = strace_kill.run_killed_at(scenario.argv, k, syscalls=(name,))
        outcomes.append(scenario.judge(f"{name} #{k}", proc))
    return outcomes


def kill_after(scenario: Scenario, delays: list[float]) -> list[Outcome]:
    outcomes = []
    for delay in delays:
        scenario.reset()
        proc = strace_kill.run_killed_after(scenario.argv, delay)
        outcomes.append(scenario.judge(f"after {delay:.3f} s", proc))
    return outcomes
