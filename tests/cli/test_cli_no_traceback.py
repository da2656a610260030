"""Issue 40, point 1: what a careless or unlucky user meets is one line and an exit code, never a traceback: a
folder they may not write, a path under a file, output that cannot be written (`> /dev/full`), a cache they may
not read.

Permissions are tested as a user they apply to. Root ignores them (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), and the
Python here may live in root's home, which another uid cannot enter: so under root the command runs without those
capabilities (dropped from the bounding set before exec, as `setpriv --bounding-set=-dac_override,...` does), which
makes root meet permissions as any user does; as another user it runs as it is."""

from __future__ import annotations

import ctypes
import os
import subprocess

import pytest

from cli_helpers import COMPAT, Run, compat, engine_tree

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER = 1, 2, 3


def _meet_permissions() -> None:
    """In the child before exec: give up what lets root ignore a file's mode."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def as_user(*args, cwd=None, env=None, stdout=subprocess.PIPE) -> Run:
    proc = subprocess.run([str(COMPAT), *map(str, args)], cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=300, preexec_fn=_meet_permissions)
    return Run(proc.returncode, proc.stdout or "", proc.stderr)


def one_line_error(run: Run, code: int) -> str:
    assert run.code == code, (run.code, run.out, run.err)
    assert "Traceback" not in run.err and run.err.startswith("error: "), run.err
    lines = run.err.strip().splitlines()
    assert len(lines) == 2 and lines[1].startswith("  fix: "), run.err
    return run.err


@pytest.fixture
def read_only(tmp_path):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    probe = as_user("--version")  # the dropped capabilities really make the mode apply
    assert probe.code == 0, probe.err
    yield folder
    folder.chmod(0o755)


def test_the_permission_helper_makes_root_meet_permissions(read_only):
    proc = subprocess.run(["touch", str(read_only / "x")], capture_output=True, text=True, preexec_fn=_meet_permissions)
    assert proc.returncode != 0 and "Permission denied" in proc.stderr


@pytest.mark.parametrize("under", ["", "new/deeper"])
def test_samples_into_a_folder_the_user_may_not_write_is_one_line(read_only, env, under):
    target = read_only / under if under else read_only
    err = one_line_error(as_user("samples", target, env=env), 4)
    assert "may not write" in err and str(read_only) in err and "nothing was written" in err
    assert list(read_only.iterdir()) == []


def test_samples_under_a_file_is_one_line(tmp_path, env):
    (tmp_path / "a-file").write_text("")
    err = one_line_error(compat("samples", tmp_path / "a-file" / "samples", env=env), 4)
    assert f"{tmp_path / 'a-file'} is a file, not a directory" in err
    assert (tmp_path / "a-file").read_text() == ""


def test_matrix_out_the_user_may_not_write_is_refused_before_the_work(read_only, tmp_path, env):
    """--offline on an empty cache: had the work come first, it would have failed on the missing releases (3)."""
    err = one_line_error(as_user("matrix", "--engine", "vllm", "--offline", "--cache-dir", tmp_path / "cache",
                                 "--out", read_only / "site", env=env), 4)
    assert "--out" in err and "may not write" in err
    assert not (tmp_path / "cache" / "matrix").exists()  # nothing of the matrix was started


@pytest.mark.parametrize("argv", [
    ["probe", "--path", "tree"], ["probe", "--path", "tree", "--json"], ["env", "--json"], ["--help"], ["probe", "--help"],
    ["probe", "--jsn", "--json"],
], ids=" ".join)
def test_output_that_cannot_be_written_exits_5_as_the_help_says(tmp_path, env, argv):
    engine_tree(tmp_path / "tree")
    with open("/dev/full", "w") as full:
        run = as_user(*argv, cwd=tmp_path, env=env, stdout=full)
    err = one_line_error(run, 5)
    assert "printing the result failed (No space left on device)" in err
    assert "5    the work was done" in compat("probe", "--help").out  # what the help promises


def _unreadable_cache(tmp_path):
    cache = tmp_path / "cache"
    (cache / "releases" / "vllm" / "0.16.0").mkdir(parents=True)
    cache.chmod(0o000)
    return cache


@pytest.mark.parametrize("argv", [
    ["convert", "ckpt", "kimi-k25-eagle3-ft", "out", "--to", "vllm", "--engine", "vllm==0.16.0", "--target", "Kimi-K2.5",
     "--layer-ids-convention", "output-of"],
    ["matrix", "--engine", "vllm", "--releases", "==0.16.0", "--family", "llama", "--format", "md"],
    ["probe", "--engine", "vllm==0.16.0"],
], ids=lambda argv: argv[0])
def test_a_cache_the_user_may_not_read_is_one_line_naming_it(tmp_path, env, argv):
    assert compat("samples", tmp_path, env=env).code == 0
    cache = _unreadable_cache(tmp_path)
    try:
        run = as_user(*argv, "--cache-dir", cache, "--offline", cwd=tmp_path, env=env)
    finally:
        cache.chmod(0o755)
    err = one_line_error(run, 3)
    assert f"cannot use the cache {cache}" in err and "Permission denied" in err
    assert "chown" in err and "--cache-dir" in err and "free" not in err  # not a full disk
    assert not (tmp_path / "out").exists()


def test_a_cache_the_user_may_not_write_is_not_a_full_disk(read_only, tmp_path):
    """A fetch into a cache this user may not write said 'free some space'; it names the permission and its fix."""
    from cli_helpers import file_index, isolated_env

    env = isolated_env(tmp_path, PIP_INDEX_URL=file_index(tmp_path / "index", {"vllm": ["0.20.0"]}))
    err = one_line_error(as_user("probe", "--engine", "vllm==0.20.0", "--cache-dir", read_only, env=env), 3)
    assert f"cannot use the cache {read_only}" in err and "Permission denied" in err and "chown" in err, err
    assert "free" not in err
