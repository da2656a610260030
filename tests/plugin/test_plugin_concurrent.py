"""Several `compat plugin install` / `remove` processes on one venv at once: they never interleave, the result
equals one run, an engine process starting meanwhile imports the module patched or stock (never a broken
import), and a run that waits too long names the pid holding the venv."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from compat.cli import main
from compat.plugin import dist
from plugin_env import CPU_ATTN_MODULE, listing, run_python

BLOCK16 = "vllm-cpu-attn-block16"
SHOW = f"import {CPU_ATTN_MODULE} as m; print(m.CPUAttentionBackend.get_supported_kernel_block_sizes())"
PATCHED, ORIGINAL = "[16, MultipleOf(32)]", "[MultipleOf(32)]"


def plugin(python, action: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "compat", "plugin", action, "--engine", "vllm", "--python", str(python),
                             "--json", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def data_without_time(site) -> dict:
    data = json.loads((site / "compat_plugin_vllm" / "plugin.json").read_text())
    data.pop("installed_at")
    return data


def test_concurrent_installs_equal_one_install(fake_venv):
    python, site = fake_venv
    stock = listing(site)
    one = plugin(python, "install", "--select", BLOCK16)
    assert one.wait(timeout=300) == 0, one.stderr.read()
    one_files, one_data = listing(site), data_without_time(site)
    assert main(["plugin", "remove", "--engine", "vllm", "--python", str(python)]) == 0 and listing(site) == stock

    procs = [plugin(python, "install", "--select", BLOCK16) for _ in range(4)]
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
    assert listing(site) == one_files and data_without_time(site) == one_data
    assert not list(site.glob(".*compat-tmp"))
    shown = run_python(python, SHOW)
    assert shown.returncode == 0 and shown.stdout.strip() == PATCHED, shown.stderr


def test_an_interpreter_starting_during_installs_and_removes_is_never_broken(fake_venv):
    python, site = fake_venv
    runs = [plugin(python, "remove" if i % 3 == 2 else "install", *([] if i % 3 == 2 else ["--select", BLOCK16]))
            for i in range(6)]
    seen = []
    deadline = time.monotonic() + 120
    while any(r.poll() is None for r in runs) and time.monotonic() < deadline:
        proc = run_python(python, SHOW)
        assert proc.returncode == 0, proc.stderr  # never an interpreter or import broken by a half-written plugin
        seen.append(proc.stdout.strip())
    for run in runs:
        run.communicate(timeout=300)
        assert run.returncode == 0
    assert seen and set(seen) <= {PATCHED, ORIGINAL}, set(seen)
    assert not list(site.glob(".*compat-tmp"))


HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


def test_an_install_that_waits_too_long_names_the_holders_pid(fake_venv, capsys, monkeypatch):
    python, site = fake_venv
    before = listing(site)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(site)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(dist, "LOCK_TIMEOUT", 0.5)
        assert main(["plugin", "install", "--engine", "vllm", "--python", str(python), "--select", BLOCK16]) == 4
        err = capsys.readouterr().err
        assert f"another compat plugin run (pid {holder.pid}) holds {site} (waited 0.5 s); nothing was changed" in err, err
        assert "Traceback" not in err
    finally:
        holder.kill()
        holder.wait()
    assert listing(site) == before


def test_a_bytecode_cache_written_into_the_moved_package_does_not_fail_the_install(fake_venv, capsys, monkeypatch):
    """The race CI met: an interpreter of the venv starts (the .pth imports our package), another install moves
    the package aside, and the interpreter's bytecode write re-creates `compat_plugin_vllm/__pycache__/` before
    the new package is renamed in. Modelled in one process: CPython's own SourceFileLoader.set_data writes the
    cache right after remove(), as a racing interpreter would."""
    import importlib.machinery

    python, site = fake_venv
    assert main(["plugin", "install", "--engine", "vllm", "--python", str(python), "--select", BLOCK16]) == 0
    package = site / "compat_plugin_vllm"
    cache = package / "__pycache__" / f"__init__.{sys.implementation.cache_tag}.pyc"
    real_remove = dist.remove
    raced = []

    def remove_then_race(site_dir, engine):
        removed = real_remove(site_dir, engine)
        assert not package.exists()
        importlib.machinery.SourceFileLoader("compat_plugin_vllm", str(package / "__init__.py")).set_data(str(cache), b"stale")
        raced.append(cache.is_file())
        return removed

    monkeypatch.setattr(dist, "remove", remove_then_race)
    assert main(["plugin", "install", "--engine", "vllm", "--python", str(python), "--select", BLOCK16]) == 0
    assert raced == [True]
    # the racer's cache went with the directory in the way (a cache there now is the venv's own, written after)
    assert (package / "__init__.py").is_file() and not (cache.is_file() and cache.read_bytes() == b"stale")
    assert not list(site.glob(".*compat-tmp"))
    shown = run_python(python, SHOW)
    assert shown.returncode == 0 and shown.stdout.strip() == PATCHED, shown.stderr
