"""Owner-marked directories beside DST, their recovery after a kill, and the swap that keeps DST present."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compat.cli import main as compat_main
from compat.convert import staging
from compat.convert.staging import commit, find_leftovers, make_staging, owner_alive, recover_leftovers

MAKE_AND_EXIT = "import sys; from pathlib import Path; from compat.convert.staging import make_staging; print(make_staging(Path(sys.argv[1])))"
MAKE_AND_WAIT = MAKE_AND_EXIT + "; sys.stdout.flush(); import time; time.sleep(120)"


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if "compat-" in p.name)


def dead_owner_dir(dst: Path) -> Path:
    """A temporary directory made by another process that has since exited (as after a SIGKILL)."""
    out = subprocess.run([sys.executable, "-c", MAKE_AND_EXIT, str(dst)], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19].decode()


def test_the_marker_names_this_process(tmp_path):
    path = make_staging(tmp_path / "out")
    (item,) = find_leftovers(tmp_path / "out")
    assert item.path == path and item.kind == "tmp" and item.pid == os.getpid() and item.alive
    assert not owner_alive(os.getpid(), "1", item.boot)  # same pid, another start time: a reused pid
    assert not owner_alive(os.getpid(), item.start, "00000000" if item.boot != "00000000" else "ffffffff")  # another boot
    assert recover_leftovers(tmp_path / "out") == [f"left {path.name}: its owner, process {os.getpid()}, is still running"]
    assert path.is_dir()


def test_a_dead_owners_directory_is_removed_and_said(tmp_path):
    dst = tmp_path / "out"
    path = dead_owner_dir(dst)
    (path / "model.safetensors").write_bytes(b"partial")
    assert recover_leftovers(dst, dry_run=True) == [f"would remove {path.name} (left by process {find_leftovers(dst)[0].pid}, which is gone)"]
    assert path.is_dir()
    (message,) = recover_leftovers(dst)
    assert message.startswith(f"removed {path.name} (left by process") and "a partial output" in message
    assert leftovers(tmp_path) == []


def test_a_running_owner_is_left_alone_until_it_is_gone(tmp_path):
    dst = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", MAKE_AND_WAIT, str(dst)], stdout=subprocess.PIPE, text=True)
    try:
        path = Path(proc.stdout.readline().strip())
        assert "is still running" in recover_leftovers(dst)[0] and path.is_dir()
        proc.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 30
        while owner_alive(proc.pid, start_time(proc.pid), find_leftovers(dst)[0].boot) and time.monotonic() < deadline:
            time.sleep(0.05)  # a zombie until reaped: already gone for us
        assert recover_leftovers(dst)[0].startswith(f"removed {path.name}")
    finally:
        proc.kill()
        proc.wait()


def test_an_old_dst_is_put_back_when_dst_is_absent(tmp_path):
    dst = tmp_path / "out"
    old = dead_owner_dir(dst)
    renamed = old.with_name(old.name.replace(".compat-tmp-", ".compat-old-"))
    os.rename(old, renamed)
    (renamed / "config.json").write_text("{}")
    (message,) = recover_leftovers(dst)
    assert message.startswith(f"put back {renamed.name} as {dst}") and (dst / "config.json").read_text() == "{}"
    other = dead_owner_dir(dst)
    os.rename(other, other.with_name(other.name.replace(".compat-tmp-", ".compat-old-")))
    assert recover_leftovers(dst)[0].startswith("removed") and (dst / "config.json").is_file()  # DST present: only a leftover
    assert leftovers(tmp_path) == []


def test_directories_of_earlier_versions_are_reported_not_removed(tmp_path):
    legacy = tmp_path / ".out.compat-tmp-ab12_x9z"
    legacy.mkdir()
    assert "earlier compat version" in recover_leftovers(tmp_path / "out")[0] and legacy.is_dir()
    (tmp_path / ".other.compat-tmp-ab12_x9z").mkdir()  # another DST's: not ours to mention
    assert len(recover_leftovers(tmp_path / "out")) == 1


def test_long_dst_names_keep_distinct_markers(tmp_path):
    a, b = tmp_path / ("x" * 200 + "a"), tmp_path / ("x" * 200 + "b")
    make_staging(a)
    assert len(find_leftovers(a)) == 1 and find_leftovers(b) == []


def test_force_swap_exchanges_in_one_step(tmp_path):
    dst, new = tmp_path / "out", make_staging(tmp_path / "out")
    dst.mkdir()
    (dst / "v").write_text("old")
    (new / "v").write_text("new")
    previous = commit(new, dst, force=True)
    assert (dst / "v").read_text() == "new" and (previous / "v").read_text() == "old" and ".compat-del-" in previous.name
    with pytest.raises(Exception, match="appeared during the conversion"):
        commit(make_staging(dst), dst, force=False)


def test_two_rename_fallback_killed_between_its_renames_is_recovered(tmp_path):
    """Without renameat2 the swap is two renames; a kill between them leaves no DST, and the next run puts it back."""
    dst = tmp_path / "out"
    dst.mkdir()
    (dst / "v").write_text("old")
    pid = os.fork()
    if pid == 0:  # the child: swap with the fallback and die right before the second rename
        try:
            new = make_staging(dst)
            (new / "v").write_text("new")
            staging._rename2 = lambda src, target, flags: False
            real = os.rename

            def rename(src, target):
                if Path(target) == dst:
                    os._exit(9)
                real(src, target)

            staging.os.rename = rename
            commit(new, dst, force=True)
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 9
    assert not dst.exists() and sorted(p.kind for p in find_leftovers(dst)) == ["old", "tmp"]
    messages = recover_leftovers(dst)
    assert any(m.startswith("put back") for m in messages) and any("removed" in m for m in messages)
    assert (dst / "v").read_text() == "old" and leftovers(tmp_path) == []


def test_the_command_recovers_before_it_plans_and_says_so(tmp_path, capsys, drafter):
    src, dst = drafter("eagle"), tmp_path / "out"
    path = dead_owner_dir(dst)
    assert compat_main(["convert", "ckpt", str(src), str(dst), "--to", "vllm", "--dry-run"]) == 0
    assert f"recovery: would remove {path.name}" in capsys.readouterr().err and path.is_dir()
    assert compat_main(["convert", "ckpt", str(src), str(dst), "--to", "vllm"]) == 0
    assert f"recovery: removed {path.name}" in capsys.readouterr().err
    assert leftovers(tmp_path) == [] and (dst / "model.safetensors").is_file()
