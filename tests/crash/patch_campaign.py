"""Kill campaigns on `compat patch` and `compat patch --revert` (used by test_patch_crash.py and bench/bench_crash.py).

A campaign kills the operation on a small vLLM-shaped tree (tests/patches/patch_trees.py: three
patches, four files, cached bytecode of each module in the three invalidation modes and for two
interpreters), at the N-th write-like syscall (strace) or after a delay, then runs one compat
command on the tree (rotating through `--status`, `compat probe`, `--dry-run`, apply and `--revert`)
and checks what the journal promises:

- the tree is byte for byte the original or the fully patched one (the record included),
- no temp file (`.<name>.XXXX.compat-tmp`) and no journal is left,
- no cached bytecode that is not its module's current source is left (in any invalidation mode),
- `--status` agrees with the files (the record's patches and intact, or nothing applied),
- `--revert` then gives the original bytes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "patches"))

import strace_kill  # noqa: E402
from patch_trees import compile_bytecode, snapshot, stale_bytecode, write_mini_kimi_vllm  # noqa: E402

MODULES = ("vllm/config/speculative.py", "vllm/model_executor/models/deepseek_v2.py",
           "vllm/model_executor/models/kimi_k25.py", "vllm/v1/spec_decode/eagle.py")
PATCHES = ["vllm-eagle3-whitelist", "vllm-deepseek-eagle3-aux", "vllm-kimi-k25-eagle3"]
EPOCH = "1767225600"  # SOURCE_DATE_EPOCH: the record's timestamps, so a patched tree is the same bytes every time
OTHER_TAG = "cpython-39"  # bytecode of another interpreter sharing the tree
FIRST_COMMANDS = (["--status"], ["probe"], ["--dry-run"], [], ["--revert"])
ORIGINAL, PATCHED, PARTIAL = "original", "patched", "partial"


def compat(*argv: str) -> tuple[int, str]:
    """Run a compat command in this process; (exit code, stdout)."""
    from compat.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = EPOCH
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    finally:
        if saved is None:
            del os.environ["SOURCE_DATE_EPOCH"]
        else:
            os.environ["SOURCE_DATE_EPOCH"] = saved
    return code, out.getvalue()


def call_sequence(argv: list[str], env: dict) -> list[str]:
    """The write-like syscalls a normal run makes, in order.

    strace counts `when=N` per syscall, not across the set, so the k-th write-like call of a run
    is its j-th call of one syscall: `kill_at_call` kills exactly there.
    """
    import re
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile(prefix="strace-seq-", suffix=".txt") as trace:
        subprocess.run(["strace", "-f", "-qq", "-o", trace.name, "-e", f"trace={','.join(strace_kill.WRITE_SYSCALLS)}", *argv],
                       capture_output=True, text=True, env=env, timeout=300)
        lines = Path(trace.name).read_text().splitlines()
    call = re.compile(r"^(?:\d+ +)?([a-z0-9_]+)\(")
    return [m.group(1) for line in lines if (m := call.match(line))]


def kill_at_call(argv: list[str], sequence: list[str], k: int, env: dict):
    """SIGKILL the run at its k-th write-like call (1-based, as in `sequence`), before the call happens."""
    import subprocess

    name = sequence[k - 1]
    nth = sequence[:k].count(name)
    cmd = ["strace", "-f", "-qq", "-o", os.devnull, "-e", f"trace={name}", "-e", f"inject={name}:signal=KILL:when={nth}", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


def leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.name.endswith(".compat-tmp") or p.name == ".compat-patches.journal")


@dataclass
class Outcome:
    n: int | None  # the syscall it was killed at (None: after a delay)
    delay: float | None
    killed: bool
    raw_state: str  # right after the kill: original, patched or partial (some files changed, not all)
    raw_leftovers: list[str]
    first_command: list[str]
    settled_state: str = ""
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def unrecoverable(self) -> bool:
        return bool(self.problems)


class Campaign:
    def __init__(self, workdir: Path, operation: str):
        assert operation in ("patch", "revert")
        self.workdir = Path(workdir)
        self.operation = operation
        self._made = 0
        self.env = {**os.environ, "SOURCE_DATE_EPOCH": EPOCH, "PYTHONDONTWRITEBYTECODE": "1"}
        self.original = self.state_of(self._tree(patched=False))
        self.patched = self.state_of(self._tree(patched=True))
        assert self.original != self.patched

    # -- trees --------------------------------------------------------------------------------
    def _tree(self, patched: bool) -> Path:
        self._made += 1
        root = self.workdir / f"t{self._made:04d}"
        shutil.rmtree(root, ignore_errors=True)
        write_mini_kimi_vllm(root)
        if patched:
            code, out = compat("patch", "--path", str(root), "--json")
            assert code == 0 and sorted(json.loads(out)["changed"]) == sorted(MODULES), out
        compile_bytecode(root, MODULES)  # as if the engine had been imported since
        for pyc in root.rglob("__pycache__/*.pyc"):
            shutil.copyfile(pyc, pyc.with_name(pyc.name.replace(sys.implementation.cache_tag, OTHER_TAG)))
        return root

    def fresh(self) -> Path:
        """A tree in the state the operation starts from."""
        return self._tree(patched=self.operation == "revert")

    def argv(self, root: Path) -> list[str]:
        return [sys.executable, "-m", "compat", "patch", "--path", str(root), *(["--revert"] if self.operation == "revert" else [])]

    def state_of(self, root: Path) -> dict[str, str]:
        """Every file's sha256 but bytecode, temp files and the journal; the record with its tree path masked."""
        out = {}
        for rel, digest in snapshot(root).items():
            if "__pycache__" in rel or rel.endswith((".compat-tmp", ".compat-patches.journal")):
                continue
            if rel.endswith(".compat-patches.json"):
                import hashlib

                masked = (root / rel).read_bytes().replace(str(root.resolve()).encode(), b"<ROOT>")
                digest = hashlib.sha256(masked).hexdigest()
            out[rel] = digest
        return out

    def classify(self, root: Path) -> str:
        state = self.state_of(root)
        return ORIGINAL if state == self.original else PATCHED if state == self.patched else PARTIAL

    # -- kill points --------------------------------------------------------------------------
    def sequence(self) -> list[str]:
        if not hasattr(self, "_sequence"):
            self._sequence = call_sequence(self.argv(self.fresh()), self.env)
            counted = strace_kill.count_write_calls(self.argv(self.fresh()), env=self.env)
            assert counted == len(self._sequence), (counted, self._sequence)  # the same run, counted two ways
        return self._sequence

    def spread(self, runs: int) -> list[int]:
        """`runs` kill points evenly spaced over the run's write-like calls (every one when there are fewer)."""
        total = len(self.sequence())
        if runs >= total:
            return list(range(1, total + 1))
        return sorted({1 + round(i * (total - 1) / (runs - 1)) for i in range(runs)})

    def delays(self, runs: int, seed: int = 0) -> list[float]:
        """Random kill delays over the part of a run where it writes (after the imports)."""
        samples = []
        for _ in range(3):
            root = self.fresh()
            started = time.monotonic()
            strace_kill.run_killed_after(self.argv(root), 600, env=self.env)
            samples.append(time.monotonic() - started)
        whole = min(samples)
        rng = random.Random(seed)
        return [rng.uniform(0.5 * whole, 1.0 * whole) for _ in range(runs)]

    # -- one kill, then the checks -----------------------------------------------------------------
    def check(self, root: Path, proc, n: int | None, delay: float | None, index: int) -> Outcome:
        first = FIRST_COMMANDS[index % len(FIRST_COMMANDS)]
        outcome = Outcome(n, delay, strace_kill.was_killed(proc), self.classify(root), leftovers(root), first)
        if not outcome.killed and proc.returncode != 0:
            outcome.problems.append(f"the run was not killed but exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
        problems = outcome.problems
        argv = ["probe", "--path", str(root), "--json"] if first == ["probe"] else ["patch", "--path", str(root), *first, "--json"]
        code, out = compat(*argv)
        if code != 0:
            problems.append(f"`compat {' '.join(argv[:1] + argv[3:])}` after the kill exited {code}: {out.strip()[-300:]}")
        with contextlib.suppress(ValueError):
            outcome.notes = json.loads(out).get("notes", [])
        outcome.settled_state = state = self.classify(root)
        if state == PARTIAL:
            problems.append("after the next run the tree is neither the original nor fully patched")
        if leftovers(root):
            problems.append(f"left behind: {leftovers(root)}")
        if stale_bytecode(root):
            problems.append(f"bytecode that is not its source: {stale_bytecode(root)}")
        code, out = compat("patch", "--path", str(root), "--status", "--json")
        status = json.loads(out) if code == 0 else {}
        applied = [(p.get("id"), p.get("intact")) for p in status.get("applied", [])]
        states = {p["id"]: (p["state"], p.get("by")) for p in status.get("patches", [])}
        if state == PATCHED and (applied != [(i, True) for i in PATCHES] or any(states[i] != ("present", "compat") for i in PATCHES)):
            problems.append(f"--status contradicts the patched files: {applied} {states}")
        if state == ORIGINAL and (applied or any(states[i][0] != "apply" for i in PATCHES)):
            problems.append(f"--status contradicts the original files: {applied} {states}")
        code, out = compat("patch", "--path", str(root), "--revert", "--json")
        if code != 0 or self.classify(root) != ORIGINAL or leftovers(root) or (root / "vllm/.compat-patches.json").exists():
            problems.append(f"--revert did not give the original bytes (exit {code}): {out.strip()[-300:]}")
        if stale_bytecode(root):
            problems.append(f"after --revert, bytecode that is not its source: {stale_bytecode(root)}")
        return outcome

    def run(self, points: list[int] = (), delays: list[float] = (), workers: int = 2) -> list[Outcome]:
        """Kill at each point and after each delay (the kills run `workers` at a time), then check each tree."""
        jobs = [(n, None) for n in points] + [(None, d) for d in delays]
        if points:
            self.sequence()
        trees = [self.fresh() for _ in jobs]  # made here: tree making runs compat in this process

        def killed(job_and_root):
            (n, delay), root = job_and_root
            argv = self.argv(root)
            if n is not None:
                return kill_at_call(argv, self.sequence(), n, env=self.env)
            return strace_kill.run_killed_after(argv, delay, env=self.env)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            procs = list(pool.map(killed, zip(jobs, trees)))
        return [self.check(root, proc, n, delay, i) for i, ((n, delay), root, proc) in enumerate(zip(jobs, trees, procs))]


def summary(operation: str, outcomes: list[Outcome]) -> dict:
    """The campaign's figures: runs, what the kills left, and what the next run left."""
    return {
        "operation": operation,
        "runs": len(outcomes),
        "killed": sum(o.killed for o in outcomes),
        "partial states": sum(o.raw_state == PARTIAL for o in outcomes),  # some files changed, not all
        "mid-state (journal, temp file or partial)": sum(bool(o.raw_leftovers) or o.raw_state == PARTIAL for o in outcomes),
        "leftovers after the next run": sum(any(p.startswith("left behind") for p in o.problems) for o in outcomes),
        "unrecoverable": sum(o.unrecoverable for o in outcomes),
    }
