"""Every OSError a patch or revert run can meet, at every file operation it makes: a one-line error naming
the file and the fix, exit 4 with the tree exactly as before (nothing was changed), or, when the
error cannot be undone at once, a journal the next run settles; and exit 5 when the change was
made but printing the result failed.

Errors are injected in-process at the os calls the run makes on the tree (write, fchmod, fsync,
rename, unlink), one call at a time; tests/crash/test_patch_crash.py injects them with strace.
"""

from __future__ import annotations

import errno
import json
import os
import py_compile
import sys
from pathlib import Path

import pytest

from compat.cli import main
from compat.patch_record import RECORD_NAME
from compat.patching.journal import JOURNAL_NAME
from patch_trees import snapshot, write_mini_vllm

MODULES = ("vllm/config/speculative.py", "vllm/model_executor/models/deepseek_v2.py")
ERRNOS = {errno.ENOSPC: "full", errno.EIO: "I/O error", errno.EACCES: "not writable", errno.EROFS: "read-only filesystem",
          errno.EPERM: "not writable"}
CALLS = ("write", "fchmod", "fsync", "replace", "unlink")


def sources(root: Path) -> dict[str, str]:
    """The tree's bytes without bytecode caches; the record by what it says (not where or when it was written)."""
    out = {k: v for k, v in snapshot(root).items()
           if "__pycache__" not in k and not k.endswith((JOURNAL_NAME, ".compat-tmp"))}  # leftovers() checks those
    record = root / "vllm" / RECORD_NAME
    if record.exists():
        data = json.loads(record.read_text())
        data.pop("tree")
        for patch in data["patches"]:
            patch.pop("applied_at")
        out[f"vllm/{RECORD_NAME}"] = json.dumps(data, sort_keys=True)
    return out


def leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.name.endswith(".compat-tmp") or p.name == JOURNAL_NAME)


def with_bytecode(root: Path) -> Path:
    """Cached bytecode of every module, in the three invalidation modes (one per optimization level)."""
    modes = [py_compile.PycInvalidationMode.UNCHECKED_HASH, py_compile.PycInvalidationMode.CHECKED_HASH,
             py_compile.PycInvalidationMode.TIMESTAMP]
    for rel in MODULES:
        for level, mode in enumerate(modes):
            source = root / rel
            cfile = source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}{'' if not level else f'.opt-{level}'}.pyc"
            py_compile.compile(str(source), cfile=str(cfile), optimize=level, invalidation_mode=mode, doraise=True)
    return root


class Injector:
    """Wraps the os calls a run makes; counts those on files under `root`; fails the chosen ones."""

    def __init__(self, monkeypatch, root: Path):
        self.root = str(root.resolve())
        self.calls: list[tuple[str, str]] = []
        self.fail_at: set[int] = set()
        self.code = errno.ENOSPC
        for name in CALLS:
            monkeypatch.setattr(os, name, self._wrap(name, getattr(os, name)))

    def _target(self, name: str, args) -> str | None:
        first = args[0]
        if isinstance(first, int):
            if first <= 2:
                return None  # stdin/stdout/stderr
            try:
                path = os.readlink(f"/proc/self/fd/{first}")
            except OSError:
                return None
        else:
            path = os.path.abspath(os.fspath(first))
        return path if path.startswith(self.root) else None

    def _wrap(self, name: str, real):
        def call(*args, **kwargs):
            path = self._target(name, args)
            if path is not None:
                self.calls.append((name, path))
                if len(self.calls) - 1 in self.fail_at:
                    raise OSError(self.code, os.strerror(self.code), *([] if isinstance(args[0], int) else [args[0]]))
            return real(*args, **kwargs)
        return call


def run(capsys, *argv) -> tuple[int, dict, str]:
    code = main(["patch", *argv, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def expected_outcome(call: tuple[str, str], root: Path) -> str:
    """What a single failing call must lead to."""
    name, path = call
    if name == "fsync" and os.path.isdir(path):
        return "done"  # a directory's fsync: some filesystems cannot, never an error
    if name == "unlink" and path.endswith(JOURNAL_NAME):
        return "done, journal left"  # every change is made; the next run removes the journal
    return "refused"


@pytest.fixture
def tree(tmp_path):
    return with_bytecode(write_mini_vllm(tmp_path / "t"))


def _campaign(tmp_path, capsys, monkeypatch, operation: str, code: int):
    """One fresh tree per failing call: every call of the run, in turn."""
    def fresh(name):
        root = with_bytecode(write_mini_vllm(tmp_path / name))
        if operation == "revert":
            assert main(["patch", "--path", str(root)]) == 0
            capsys.readouterr()
        return root

    argv = ["--revert"] if operation == "revert" else []
    probe = fresh("count")
    counting = Injector(monkeypatch, probe)
    before_run = sources(probe)
    assert run(capsys, "--path", str(probe), *argv)[0] == 0
    after_run = sources(probe)
    calls = [(n, os.path.relpath(p, probe.resolve())) for n, p in counting.calls]
    monkeypatch.undo()
    kinds = {n for n, _ in calls}
    assert kinds == set(CALLS), kinds  # the run writes, chmods, fsyncs, renames and unlinks (the bytecode, the journal)
    for i, (name, rel) in enumerate(calls):
        root = fresh(f"t{i}")
        before = sources(root)
        assert before == before_run
        injector = Injector(monkeypatch, root)
        injector.fail_at, injector.code = {i}, code
        status, result, err = run(capsys, "--path", str(root), *argv)
        monkeypatch.undo()
        outcome = expected_outcome((name, str(root / rel)), root)
        where = f"{operation}: {os.strerror(code)} at call {i} ({name} {rel})"
        if outcome == "refused":
            assert status == 4, where
            assert sources(root) == before, where
            assert leftovers(root) == [], where
            message = result["error"]
            assert "\n" not in message and str(root) in message and "Traceback" not in err, (where, message)
            assert "nothing was changed" in message and result["fix"], (where, message)
            assert ERRNOS[code] in message + " " + result["fix"], (where, message, result["fix"])
        else:
            assert status == 0, where
            assert sources(root) == after_run, where
            if outcome == "done, journal left":
                assert leftovers(root) == [f"vllm/{JOURNAL_NAME}"] and "could not be removed" in " ".join(result["notes"])
                status, result, _ = run(capsys, "--path", str(root), "--status")
                assert any("made every change" in n for n in result["notes"]), where
            assert leftovers(root) == [], where
        # whatever happened, the tree still works: a run without the error finishes the operation
        assert run(capsys, "--path", str(root), *argv)[0] == 0, where
        assert sources(root) == after_run and leftovers(root) == [], where


@pytest.mark.parametrize("code", list(ERRNOS), ids=[errno.errorcode[c] for c in ERRNOS])
def test_patch_meets_an_oserror_at_every_call(tmp_path, capsys, monkeypatch, code):
    _campaign(tmp_path, capsys, monkeypatch, "patch", code)


@pytest.mark.parametrize("code", list(ERRNOS), ids=[errno.errorcode[c] for c in ERRNOS])
def test_revert_meets_an_oserror_at_every_call(tmp_path, capsys, monkeypatch, code):
    _campaign(tmp_path, capsys, monkeypatch, "revert", code)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
def test_an_error_that_persists_leaves_a_journal_the_next_run_settles(tmp_path, capsys, monkeypatch, code):
    """Every call from the i-th on fails (the disk stays full): the run cannot undo itself either, says so,
    and the first run after the disk is fixed puts the tree back exactly as before."""
    counting_root = with_bytecode(write_mini_vllm(tmp_path / "count"))
    counting = Injector(monkeypatch, counting_root)
    run(capsys, "--path", str(counting_root))
    total = len(counting.calls)
    monkeypatch.undo()
    half_done = 0
    for i in range(total):
        root = with_bytecode(write_mini_vllm(tmp_path / f"t{i}"))
        before = sources(root)
        injector = Injector(monkeypatch, root)
        injector.fail_at, injector.code = set(range(i, 10 * total)), code
        status, result, err = run(capsys, "--path", str(root))
        monkeypatch.undo()
        if status == 0:  # only the journal's removal (or a directory fsync) failed: the change is complete
            continue
        assert status == 4 and "\n" not in result["error"] and "Traceback" not in err
        if "half done" in result["error"]:
            half_done += 1
            assert "the next compat patch run on this tree will undo it" in result["error"]
        else:
            assert sources(root) == before and "nothing was changed" in result["error"]
        status, result, _ = run(capsys, "--path", str(root), "--status")
        assert status == 0 and sources(root) == before and leftovers(root) == []
        assert not result["applied"]
    assert half_done  # the campaign did reach the states only a journal can repair


def test_stdout_failing_after_the_change_exits_5_and_says_what_was_done(tree, capsys, monkeypatch):
    class Full:
        """stdout on a disk that fills up once the plan is printed."""
        def __init__(self):
            self.text, self.pending = "", ""

        def write(self, text):
            if self.pending or "Applied" in text or "Reverted" in text:
                self.pending += text
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            self.text += text
            return len(text)

        def flush(self):
            if self.pending:  # what could not be written is still there, as in a real file's buffer
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def isatty(self):
            return False

        def fileno(self):
            raise OSError(errno.EBADF, "no fd")

    for argv, done in ((["patch", "--path", str(tree)], "applied vllm-eagle3-whitelist, vllm-deepseek-eagle3-aux"),
                       (["patch", "--path", str(tree), "--revert"], "reverted vllm-eagle3-whitelist, vllm-deepseek-eagle3-aux")):
        full = Full()
        monkeypatch.setattr(sys, "stdout", full)
        assert main(argv) == 5
        monkeypatch.undo()
        err = capsys.readouterr().err
        assert f"error: {done}" in err and "but printing the result failed (No space left on device)" in err
        assert "vllm 0.11.0" in full.text or "--revert" in argv  # the plan was printed before the change
    assert not (tree / "vllm" / RECORD_NAME).exists()  # the revert did happen


def test_stdout_failing_before_the_change_changes_nothing(tree):
    import subprocess

    before = sources(tree)
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "compat", "patch", "--path", str(tree)], stdout=full,
                              stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 4 and sources(tree) == before
    assert proc.stderr.strip() == "error: nothing was changed; printing the result failed (No space left on device)"


def test_an_unreadable_file_is_a_one_line_refusal(tree, capsys, monkeypatch):
    import builtins

    real_open = builtins.open

    def deny(path, *args, **kwargs):
        if str(path).endswith("deepseek_v2.py"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", deny)
    code, result, err = run(capsys, "--path", str(tree), "--dry-run")
    assert code == 4 and "deepseek_v2.py: cannot read it (Permission denied)" in result["error"] and "Traceback" not in err
