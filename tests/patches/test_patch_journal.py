"""The journal, in-process and fast: a run killed between its writes (os._exit in a child) is settled by
whatever compat command runs next (apply, --revert, --status, --dry-run, probe), which says what it
did; a file changed since, a journal this user cannot settle, a damaged journal, stray temp files.
tests/crash/test_patch_crash.py does the same with SIGKILL at every write-like syscall."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compat.cli import main
from compat.patch_record import RECORD_NAME, applied_patches
from compat.patching import applied_patches_settled
from compat.patching import journal
from compat.sources import open_path
from patch_trees import compile_bytecode, snapshot, stale_bytecode, write_mini_vllm

CONFIG = "vllm/config/speculative.py"
MODEL = "vllm/model_executor/models/deepseek_v2.py"

# Run compat in a child that dies (os._exit: no cleanup, like SIGKILL) at the k-th replacement the
# journal makes (1 is the journal itself), or right before the journal's removal (k = 0).
KILLED = """
import os, sys
from compat.patching import journal
from compat.cli import main
k, calls = int(sys.argv[1]), [0]
real_write, real_remove = journal.write_atomic, journal.remove_file
def write(path, data):
    calls[0] += 1
    if calls[0] == k:
        os._exit(9)
    real_write(path, data)
def remove(path):
    if k == 0 and path.name == journal.JOURNAL_NAME:
        os._exit(9)
    real_remove(path)
journal.write_atomic, journal.remove_file = write, remove
sys.exit(main(["patch", "--path", *sys.argv[2:]]))
"""


def killed_run(root: Path, k: int, *argv: str) -> None:
    proc = subprocess.run([sys.executable, "-c", KILLED, str(k), str(root), *argv], capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr


def run(capsys, *argv) -> tuple[int, dict]:
    code = main(["patch", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def state(root: Path) -> dict:
    return {k: v for k, v in snapshot(root).items() if "__pycache__" not in k}


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.name.endswith(".compat-tmp") or p.name == journal.JOURNAL_NAME)


@pytest.fixture
def tree(tmp_path):
    root = write_mini_vllm(tmp_path / "t")
    compile_bytecode(root, [CONFIG, MODEL])
    return root


def patched_copy(tmp_path, capsys) -> dict:
    twin = write_mini_vllm(tmp_path / "twin")
    assert main(["patch", "--path", str(twin)]) == 0
    capsys.readouterr()
    return {k: v for k, v in state(twin).items() if not k.endswith(RECORD_NAME)}


@pytest.mark.parametrize("first", [["--status"], ["--dry-run"], [], ["--revert"]], ids=["status", "dry-run", "apply", "revert"])
def test_a_patch_killed_between_files_is_rolled_back_by_the_next_command(tree, capsys, first):
    original = state(tree)
    killed_run(tree, 3)  # the journal and the first file were written; the second file and the record were not
    assert state(tree) != original and leftovers(tree) == [journal.JOURNAL_NAME]
    code, result = run(capsys, "--path", str(tree), *first)
    assert code == 0
    assert any("interrupted; rolled it back: restored vllm/config/speculative.py as before that run" in n for n in result["notes"])
    if first == []:
        assert sorted(result["changed"]) == [CONFIG, MODEL]  # and then applied, whole
    else:
        assert state(tree) == original
    assert leftovers(tree) == [] and stale_bytecode(tree) == []


def test_probe_settles_it_too_and_says_so(tree, capsys):
    original = state(tree)
    killed_run(tree, 2)
    assert main(["probe", "--path", str(tree), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["compat_patches"] == []
    assert "note: an earlier `compat patch` run" in captured.err and "rolled it back" in captured.err
    assert state(tree) == original and leftovers(tree) == []


def test_a_revert_killed_half_way_is_finished_by_the_next_command(tree, capsys):
    original = state(tree)
    assert main(["patch", "--path", str(tree)]) == 0
    capsys.readouterr()
    killed_run(tree, 3, "--revert")  # one file reverted, one still patched, the record still there
    code, result = run(capsys, "--path", str(tree), "--status")
    assert code == 0 and result["applied"] == []
    assert any("`compat patch --revert` run" in n and "finished it" in n for n in result["notes"])
    assert state(tree) == original and leftovers(tree) == [] and stale_bytecode(tree) == []


def test_a_run_killed_after_its_last_change_stands(tree, tmp_path, capsys):
    killed_run(tree, 0)
    assert leftovers(tree) == [journal.JOURNAL_NAME]
    code, result = run(capsys, "--path", str(tree), "--status")
    assert code == 0 and any("after it had made every change; they stand" in n for n in result["notes"])
    assert [p["id"] for p in result["applied"]] == ["vllm-eagle3-whitelist", "vllm-deepseek-eagle3-aux"]
    assert {k: v for k, v in state(tree).items() if not k.endswith(RECORD_NAME)} == patched_copy(tmp_path, capsys)


def test_a_file_changed_after_the_kill_is_not_overwritten_unless_forced(tree, capsys):
    original = (tree / CONFIG).read_bytes()
    killed_run(tree, 3)
    (tree / MODEL).write_text("# someone else's edit\n")
    assert main(["patch", "--path", str(tree), "--revert"]) == 4
    assert f"changed after an interrupted compat patch run (neither its old nor its new content): {MODEL}" in capsys.readouterr().err
    assert (tree / MODEL).read_text() == "# someone else's edit\n" and leftovers(tree) == [journal.JOURNAL_NAME]
    code, result = run(capsys, "--path", str(tree), "--status")  # reading: says so, changes nothing
    assert code == 0 and result["applied"][-1]["interrupted"] == "patch" and not result["applied"][-1]["intact"]
    assert main(["patch", "--path", str(tree), "--status", "--force"]) == 0
    assert (tree / CONFIG).read_bytes() == original and leftovers(tree) == []


def test_a_journal_this_user_cannot_settle_is_reported_not_hidden(tree, capsys, monkeypatch):
    killed_run(tree, 3)
    half = state(tree)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).endswith(journal.JOURNAL_NAME) else real_access(p, mode))
    code, result = run(capsys, "--path", str(tree), "--status")
    assert code == 0 and any("is not writable" in n and "run compat patch as the user that owns" in n for n in result["notes"])
    entry = result["applied"][-1]
    assert entry["interrupted"] == "patch" and entry["files"] == [CONFIG, MODEL, f"vllm/{RECORD_NAME}"]
    assert applied_patches_settled(open_path(tree), notify=lambda _: None)[-1]["interrupted"] == "patch"  # compat probe
    assert main(["patch", "--path", str(tree)]) == 4  # a writing run refuses
    assert "is not writable" in capsys.readouterr().err
    assert state(tree) == half
    monkeypatch.undo()
    assert main(["patch", "--path", str(tree), "--status"]) == 0 and leftovers(tree) == []


def test_a_damaged_journal_is_a_one_line_refusal(tree, capsys):
    (tree / "vllm" / journal.JOURNAL_NAME).write_text("{ not json")
    before = state(tree)
    assert main(["patch", "--path", str(tree)]) == 4
    err = capsys.readouterr().err
    assert "cannot read the journal of an interrupted compat patch run" in err and "Traceback" not in err
    assert state(tree) == before


def test_stray_temp_files_are_removed_and_said(tree, capsys):
    for name in (f".{journal.JOURNAL_NAME}.a1b2c3.compat-tmp", f".{RECORD_NAME}.d4e5f6.compat-tmp"):
        (tree / "vllm" / name).write_bytes(b"half a file")
    code, result = run(capsys, "--path", str(tree), "--dry-run")
    assert code == 0 and any("removed 2 temporary files" in n for n in result["notes"])
    assert leftovers(tree) == []


def test_a_journal_of_a_live_run_is_left_to_it(tree, capsys, monkeypatch):
    """Seen while another run holds the lock, a journal is that live run's: readers wait for it, then say so."""
    import fcntl

    killed_run(tree, 3)
    monkeypatch.setattr(journal, "LOCK_TIMEOUT", 0.2)
    fd = os.open(tree / "vllm", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        code, result = run(capsys, "--path", str(tree), "--status")
        assert code == 4 and "another compat patch run holds" in result["error"]  # never a half-done state
        entry = applied_patches_settled(open_path(tree), notify=lambda _: None)[-1]  # compat probe
        assert entry["interrupted"] == "patch" and "another compat patch run holds" in entry["error"]
        assert leftovers(tree) == [journal.JOURNAL_NAME]
    finally:
        os.close(fd)
    code, result = run(capsys, "--path", str(tree), "--status")
    assert code == 0 and any("rolled it back" in n for n in result["notes"]) and leftovers(tree) == []


def test_readers_wait_for_a_run_in_progress(tree, capsys, monkeypatch):
    """--status and --dry-run read under a shared lock: never while a run is changing the tree."""
    import fcntl

    monkeypatch.setattr(journal, "LOCK_TIMEOUT", 0.2)
    fd = os.open(tree / "vllm", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        for mode in ("--status", "--dry-run"):
            code, result = run(capsys, "--path", str(tree), mode)
            assert code == 4 and "another compat patch run holds" in result["error"]
        fcntl.flock(fd, fcntl.LOCK_SH)  # another reader: no wait
        for mode in ("--status", "--dry-run"):
            assert run(capsys, "--path", str(tree), mode)[0] == 0
    finally:
        os.close(fd)
