"""Several `compat patch` processes on one tree at once (a copy of the real vLLM 0.11.0 release): they never
interleave, the result equals one run, a revert after them is byte-identical, a run that waits too long
names the pid of the run holding the tree, and a process reading an engine file while it is patched keeps
reading the old bytes whole (the file is replaced, never rewritten in place).

Real processes: each run is `python -m compat patch` started with the others, all at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from compat.cli import main
from compat.patching import journal

from patch_trees import snapshot

VERSION = "0.11.0"  # the Kimi-K2.5 and whitelist patches apply to it: several files change in one run


def compat_patch(root: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "compat", "patch", "--path", str(root), "--json", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(procs: list[subprocess.Popen]) -> list[tuple[int, dict, str]]:
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        out.append((proc.returncode, json.loads(stdout) if stdout.strip() else {}, stderr))
    return out


def litter(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "vllm").rglob("*") if p.name.endswith(".compat-tmp") or p.name.endswith(".journal"))


def without(files: dict, name: str) -> dict:
    return {k: v for k, v in files.items() if k != name}


def test_concurrent_patch_runs_equal_one_run_and_revert_is_byte_identical(release_tree, tmp_path):
    root = release_tree(VERSION)
    original = snapshot(root)
    reference = tmp_path / "reference"
    shutil.copytree(root, reference)
    assert main(["patch", "--path", str(reference), "--json"]) == 0  # one run, alone
    one_run = snapshot(reference)

    results = finish([compat_patch(root) for _ in range(4)])
    assert [code for code, _, _ in results] == [0] * 4, [err for _, _, err in results]
    changed = sorted(len(result["changed"]) for _, result, _ in results)
    assert changed[:-1] == [0, 0, 0] and changed[-1] > 1, changed  # one run made every change, the others found it done
    now = snapshot(root)
    record = "vllm/.compat-patches.json"
    assert without(now, record) == without(one_run, record)
    a, b = (json.loads((r / record).read_text()) for r in (root, reference))
    assert a["files"] == b["files"] and [p["id"] for p in a["patches"]] == [p["id"] for p in b["patches"]]
    assert litter(root) == []

    # patch and revert runs racing: each is whole, so the tree ends patched or original, never between
    mixed = finish([compat_patch(root, *(["--revert"] if i % 2 else [])) for i in range(6)])
    assert all(code == 0 for code, _, _ in mixed), [err for _, _, err in mixed]
    assert without(snapshot(root), record) in (without(one_run, record), original)
    assert main(["patch", "--path", str(root), "--revert", "--json"]) == 0
    assert snapshot(root) == original and litter(root) == []


HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


def test_a_run_that_waits_too_long_names_the_holders_pid(release_tree, capsys, monkeypatch):
    root = release_tree(VERSION)
    before = snapshot(root)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(root / "vllm")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(journal, "LOCK_TIMEOUT", 0.5)
        start = time.monotonic()
        assert main(["patch", "--path", str(root)]) == 4
        waited = time.monotonic() - start
        said = capsys.readouterr()
        out, err = said.out, said.err
        assert f"another compat patch run (pid {holder.pid}) holds {root / 'vllm'} (waited 0.5 s)" in err, err
        assert f"waiting for another compat patch run (pid {holder.pid})" in out, out
        assert "Traceback" not in err and 0.5 <= waited < 30
    finally:
        holder.kill()
        holder.wait()
    assert snapshot(root) == before
    assert main(["patch", "--path", str(root), "--json"]) == 0  # the kernel released the dead holder's lock


READER = """
import hashlib, os, sys
path = sys.argv[1]
fh = open(path, "rb")
head = fh.read(100)
print(os.fstat(fh.fileno()).st_ino, flush=True)
sys.stdin.readline()  # the test patches the file now
rest = fh.read()
print(hashlib.sha256(head + rest).hexdigest(), os.stat(path).st_ino, flush=True)
"""


def test_a_process_reading_a_file_while_it_is_patched_reads_the_old_bytes_whole(release_tree):
    root = release_tree(VERSION)
    assert main(["patch", "--path", str(root), "--dry-run", "--json"]) == 0
    target = root / "vllm/config/speculative.py"
    old = hashlib.sha256(target.read_bytes()).hexdigest()
    reader = subprocess.Popen([sys.executable, "-c", READER, str(target)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        inode_before = int(reader.stdout.readline())
        assert main(["patch", "--path", str(root), "--json"]) == 0
        assert hashlib.sha256(target.read_bytes()).hexdigest() != old  # the file on disk is the patched one
        reader.stdin.write("go\n")
        reader.stdin.flush()
        digest, inode_after = reader.stdout.readline().split()
    finally:
        reader.kill()
        reader.wait()
    assert digest == old, "the reader saw bytes of the new file mixed into the old one"
    assert int(inode_after) != inode_before  # a new inode took the name; the open one was never written
    assert os.stat(target).st_ino == int(inode_after)


def test_python_importing_while_runs_patch_and_revert_always_sees_a_whole_file(release_tree):
    """An engine process starting while patch and revert runs race compiles each file whole: the old or the new."""
    root = release_tree(VERSION)
    target = root / "vllm/config/speculative.py"
    runs = [compat_patch(root, *(["--revert"] if i % 2 else [])) for i in range(6)]
    importers = []
    deadline = time.monotonic() + 60
    while any(r.poll() is None for r in runs) and time.monotonic() < deadline:
        source = target.read_bytes()
        compile(source, str(target), "exec")  # a torn file would not compile (or would differ from both)
        importers.append(subprocess.run([sys.executable, "-c", "import ast,sys; ast.parse(open(sys.argv[1],'rb').read())",
                                         str(target)], capture_output=True, text=True, timeout=60).returncode)
    finish(runs)
    assert importers and set(importers) == {0}
