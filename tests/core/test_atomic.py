"""compat/core/atomic.py, the one atomic writer: a failure at any step leaves the old file and no temp file;
the mode is the old file's (or the one asked for); text is written as UTF-8."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from compat.core import atomic


def _fail(monkeypatch, name: str) -> None:
    def boom(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, name, boom)


def _leftovers(folder: Path, keep: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != keep)


@pytest.mark.parametrize("call", ["write", "fchmod", "fsync", "replace"])
def test_a_failure_mid_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch, call):
    target = tmp_path / "config.json"
    target.write_bytes(b"old\n")
    _fail(monkeypatch, call)
    with pytest.raises(OSError, match="No space left on device") as caught:
        atomic.write_bytes(target, b"new contents\n", suffix=".compat-tmp")
    monkeypatch.undo()
    assert caught.value.errno == errno.ENOSPC
    assert target.read_bytes() == b"old\n"
    assert _leftovers(tmp_path, "config.json") == []


def test_an_interrupt_mid_write_removes_the_temp_too(tmp_path, monkeypatch):
    target = tmp_path / "a.txt"
    target.write_text("old")

    def interrupted(*args):
        raise KeyboardInterrupt("interrupted at fsync")
    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt, match="interrupted at fsync"):
        atomic.write_text(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert _leftovers(tmp_path, "a.txt") == []


def test_the_old_files_mode_is_kept(tmp_path):
    target = tmp_path / "run.sh"
    target.write_text("old")
    target.chmod(0o750)
    atomic.write_text(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750


def test_a_new_file_gets_the_mode_asked_for_and_keep_mode_false_overrides(tmp_path):
    fresh = tmp_path / "fresh"
    atomic.write_bytes(fresh, b"x", mode=0o600)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    old = tmp_path / "old"
    old.write_text("old")
    old.chmod(0o755)
    atomic.write_bytes(old, b"y", keep_mode=False, mode=0o644)
    assert stat.S_IMODE(old.stat().st_mode) == 0o644


def test_parents_are_made_when_asked_and_text_is_utf8(tmp_path):
    target = tmp_path / "a" / "b" / "c.json"
    with pytest.raises(FileNotFoundError, match="No such file or directory"):
        atomic.write_text(target, "x")
    atomic.write_text(target, "é\n", parents=True)
    assert target.read_bytes() == "é\n".encode("utf-8")
    assert _leftovers(target.parent, "c.json") == []


def test_the_temp_file_is_beside_the_target_with_the_suffix(tmp_path, monkeypatch):
    target = tmp_path / "model.py"
    seen: list[str] = []
    real = os.replace

    def spy(src, dst):
        seen.append(os.fspath(src))
        real(src, dst)
    monkeypatch.setattr(os, "replace", spy)
    atomic.write_bytes(target, b"x", suffix=".compat-tmp")
    assert len(seen) == 1
    temp = Path(seen[0])
    assert temp.parent == tmp_path and temp.name.startswith(".model.py.") and temp.name.endswith(".compat-tmp")
