"""Issue 12, point 7: `compat cache dir | list | clean [SPEC]`: where the cache is (--cache-dir, XDG_CACHE_HOME),
what it holds with sizes, cleaning a release, an engine, the facts or everything, never a release another
compat run holds the lock of; `--dry-run` only says."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import compat

KIB = 1024


def release(cache: Path, engine: str, version: str, size: int, facts: int = 0) -> Path:
    """A complete cached release as compat/sources writes it: the package's files and release.json."""
    folder = cache / "releases" / engine / version
    (folder / engine).mkdir(parents=True)
    (folder / engine / "__init__.py").write_text("")
    (folder / engine / "big.py").write_bytes(b"#" * size)
    (folder / "release.json").write_text(json.dumps({"version": version, "artifact": f"{engine}-{version}.tar.gz"}))
    if facts:
        (folder / "facts").mkdir()
        (folder / "facts" / "probe-report-x.json").write_bytes(b"{" + b" " * (facts - 2) + b"}")
    return folder


def _on_disk(path: Path) -> int:
    return path.stat().st_blocks * 512


@pytest.fixture
def cache(tmp_path):
    root = tmp_path / "xdg-cache" / "compat"  # where the env fixture's XDG_CACHE_HOME puts it
    release(root, "vllm", "0.10.0", 300 * KIB, facts=10 * KIB)
    release(root, "vllm", "0.11.0", 500 * KIB, facts=20 * KIB)
    release(root, "sglang", "0.5.8", 700 * KIB)
    (root / "index").mkdir()
    (root / "index" / "vllm.json").write_text("{}")
    (root / "facts" / "vllm" / "tree").mkdir(parents=True)
    (root / "facts" / "vllm" / "tree" / "probe-report-y.json").write_bytes(b"x" * 4 * KIB)
    (root / "engine-venv").mkdir()  # not compat's: listed, never removed
    (root / "engine-venv" / "python").write_bytes(b"x" * 2 * KIB)
    return root


def test_dir_honours_xdg_cache_home_and_cache_dir(tmp_path, env):
    assert compat("cache", "dir", env=env).out.strip() == str(tmp_path / "xdg-cache" / "compat")
    assert compat("cache", "dir", "--cache-dir", "elsewhere", env=env, cwd=tmp_path).out.strip() == str(tmp_path / "elsewhere")
    home = {k: v for k, v in env.items() if k != "XDG_CACHE_HOME"}
    assert compat("cache", "dir", env=home).out.strip() == str(Path.home() / ".cache" / "compat")


def test_list_gives_every_release_and_the_facts_with_sizes(cache, env):
    data = compat("cache", "list", "--json", env=env).json()
    rows = {(r["engine"], r["version"]): r for r in data["releases"]}
    assert set(rows) == {("vllm", "0.10.0"), ("vllm", "0.11.0"), ("sglang", "0.5.8")}
    assert 500 * KIB + 20 * KIB <= rows["vllm", "0.11.0"]["bytes"] < 530 * KIB
    facts = sorted(cache.rglob("probe-report-*.json"))  # sizes are on disk (allocated blocks), as du counts them
    assert rows["vllm", "0.11.0"]["facts_bytes"] == _on_disk(cache / "releases" / "vllm" / "0.11.0" / "facts" / "probe-report-x.json")
    assert rows["vllm", "0.11.0"]["state"] == "complete"
    assert len(facts) == 3 and data["facts_bytes"] == sum(map(_on_disk, facts)) >= 4 * KIB + 30 * KIB
    assert [Path(o["path"]).name for o in data["other"]] == ["engine-venv"]
    human = compat("cache", "list", env=env).out
    assert f"compat cache: {cache}" in human
    assert "vllm: 2 releases, 8" in human and "0.11.0" in human and "KiB" in human  # sizes people read
    assert "engine-venv 4.0 KiB" in human and "never removed" in human  # 2 KiB written: one 4 KiB block on disk


def test_clean_one_release_then_an_engine(cache, env):
    run = compat("cache", "clean", "vllm==0.11.0", env=env)
    assert run.code == 0 and "removed vllm 0.11.0 (" in run.out and "freed " in run.out
    assert not (cache / "releases" / "vllm" / "0.11.0").exists() and (cache / "releases" / "vllm" / "0.10.0").is_dir()
    assert compat("cache", "clean", "vllm", env=env).code == 0
    assert not list((cache / "releases" / "vllm").iterdir()) and (cache / "releases" / "sglang" / "0.5.8").is_dir()
    nothing = compat("cache", "clean", "vllm==0.9.0", env=env)
    assert nothing.code == 0 and "nothing to remove" in nothing.out


def test_dry_run_removes_nothing(cache, env):
    before = sorted(p for p in cache.rglob("*"))
    run = compat("cache", "clean", "--all", "--dry-run", "--json", env=env)
    assert run.code == 0 and sorted(p for p in cache.rglob("*")) == before
    doc = run.json()
    assert doc["dry_run"] and {item["what"] for item in doc["removed"]} >= {"vllm 0.10.0", "vllm 0.11.0", "sglang 0.5.8"}
    assert doc["freed_bytes"] >= (300 + 500 + 700) * KIB


def test_facts_only(cache, env):
    run = compat("cache", "clean", "--facts", env=env)
    assert run.code == 0
    assert not (cache / "facts").exists() and not (cache / "releases" / "vllm" / "0.11.0" / "facts").exists()
    assert (cache / "releases" / "vllm" / "0.11.0" / "vllm" / "big.py").is_file()


def test_all_leaves_what_is_not_compats(cache, env):
    assert compat("cache", "clean", "--all", env=env).code == 0
    assert not list((cache / "releases").rglob("release.json")) and not (cache / "facts").exists()
    assert not (cache / "index" / "vllm.json").exists() and (cache / "engine-venv" / "python").is_file()


def test_a_release_another_run_is_fetching_is_never_removed(cache, env):
    lock = cache / "locks" / "vllm-0.11.0.lock"
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time\n"
        f"f = open({str(lock)!r}, 'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        listed = {r["version"]: r for r in compat("cache", "list", "--json", env=env).json()["releases"]}
        assert listed["0.11.0"]["in_use"] and not listed["0.10.0"]["in_use"]
        run = compat("cache", "clean", "vllm", env=env)
        assert run.code == 4 and "skipped vllm 0.11.0: another compat run holds its lock" in run.out
        assert (cache / "releases" / "vllm" / "0.11.0" / "release.json").is_file()  # untouched
        assert not (cache / "releases" / "vllm" / "0.10.0").exists()  # the rest was removed
    finally:
        holder.kill()
        holder.wait()
    with open(lock) as handle:  # and the lock is free again for the next fetch
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert compat("cache", "clean", "vllm==0.11.0", env=env).code == 0


def test_clean_says_what_to_give(env):
    run = compat("cache", "clean", env=env)
    assert run.code == 2 and "a SPEC (vllm==0.11.0, vllm, 'sglang<0.5'), --facts or --all" in run.err


def test_a_damaged_release_is_listed_as_such_and_cleaned(cache, env):
    import hashlib

    folder = cache / "releases" / "vllm" / "0.11.0"
    manifest = b'{"files":{"vllm/__init__.py":0,"vllm/big.py":512000}}\n'
    (folder / "manifest.json").write_bytes(manifest)
    record = json.loads((folder / "release.json").read_text())
    record["manifest"] = {"files": 2, "bytes": 512000, "sha256": hashlib.sha256(manifest).hexdigest()}
    (folder / "release.json").write_text(json.dumps(record))
    assert {r["version"]: r["state"] for r in compat("cache", "list", "--json", env=env).json()["releases"]
            if r["engine"] == "vllm"} == {"0.10.0": "complete", "0.11.0": "complete"}
    (folder / "vllm" / "big.py").write_bytes(b"#" * 100)  # cut short
    listed = compat("cache", "list", env=env).out
    assert "0.11.0" in listed and "damaged" in listed.split("0.11.0", 1)[1].splitlines()[0]
    run = compat("cache", "clean", "vllm==0.11.0", env=env)
    assert run.code == 0 and "removed vllm 0.11.0 (damaged)" in run.out and not folder.exists()


def test_everything_compat_writes_is_listed_on_disk_and_cleaned(tmp_path, env):
    """Issue 33, item 6: the matrix folder and the fleet bundles are compat's; sizes are what the disk holds (a sparse
    5 GiB cell file is a few KiB), and clean --all removes all that list counts, never what is not compat's."""
    cache = tmp_path / "cache"
    (cache / "matrix" / "cells").mkdir(parents=True)
    with open(cache / "matrix" / "cells" / "sparse.bin", "wb") as f:
        f.truncate(5 << 30)
        f.write(b"x" * 4096)
    (cache / "fleet").mkdir()
    (cache / "fleet" / "compat-0123.zip").write_bytes(b"z" * 10_000)
    (cache / "engine-venv").mkdir()
    (cache / "engine-venv" / "f").write_text("not ours")
    listed = compat("cache", "list", "--cache-dir", cache, "--json", env=env).json()
    kept = {k["name"]: k["bytes"] for k in listed["kept"]}
    assert set(kept) == {"matrix", "fleet"} and kept["matrix"] < 1 << 20 and kept["fleet"] >= 10_000
    assert [Path(o["path"]).name for o in listed["other"]] == ["engine-venv"]
    assert listed["bytes"] == sum(kept.values())
    text = compat("cache", "list", "--cache-dir", cache, env=env).out
    assert "matrix: " in text and "GiB" not in text and "not compat's cache (never removed by compat cache clean): engine-venv" in text
    cleaned = compat("cache", "clean", "--all", "--cache-dir", cache, env=env)
    assert cleaned.code == 0 and "removed matrix folder" in cleaned.out and "removed fleet folder" in cleaned.out
    assert sorted(p.name for p in cache.iterdir()) == ["engine-venv"]
