"""The releases the tests run on are pinned (tests/releases.json, read by tests/pinned.py): collecting the release
tests needs no index and no cache, a release upstream publishes later joins nothing, an artifact that is not the
pinned one fails the test that fetched it, and a test that fetches a release without the `network` marker fails."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

import pinned

ROOT = Path(__file__).resolve().parents[1]


def releases_tool():
    spec = importlib.util.spec_from_file_location("compat_tool_releases", ROOT / "tools" / "releases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_engine_has_its_releases_pinned_with_their_artifacts():
    from compat import engines

    table = json.loads(pinned.RELEASES.read_text())
    assert set(table) == set(engines.names())
    for engine, rows in table.items():
        versions = [row["version"] for row in rows]
        assert versions == sorted(set(versions), key=Version), f"{engine}: sorted, each once"
        for row in rows:
            assert re.fullmatch(r"[0-9a-f]{64}", row["sha256"]), row
            name = engines.get(engine).index_name
            assert row["artifact"].startswith(f"{name}-{row['version']}") and \
                row["artifact"].endswith((".tar.gz", ".whl", ".zip")), row


def test_collecting_the_release_tests_needs_no_index_and_no_cache(tmp_path):
    """`pytest --collect-only -m "matrix or network"` with the index unreachable and an empty cache: it lists the
    pinned releases, the newest included, and none other."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "empty-cache"), "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
           "PIP_RETRIES": "0", "COMPAT_TEST_RELEASES": ""}
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-m", "matrix or network", "tests/matrix/test_probe_matrix.py", "tests/patches/test_vllm_matrix.py"],
                         capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ids = re.findall(r"test_vllm_release_is_probed_without_error\[([^\]]+)\]", run.stdout)
    assert ids == pinned.versions("vllm", "0.10.0"), ids
    assert pinned.newest("vllm") in ids
    assert not (tmp_path / "empty-cache" / "compat").exists()  # nothing was fetched nor listed


def test_a_release_named_for_one_run_joins_the_lists(monkeypatch):
    """What `python tools/releases.py newer --matrix` does: COMPAT_TEST_RELEASES adds releases for that run only."""
    newest = Version(pinned.newest("vllm"))
    later = f"{newest.major}.{newest.minor + 1}.0"
    monkeypatch.setenv("COMPAT_TEST_RELEASES", f"vllm=={later}")
    pinned._pinned.cache_clear()
    try:
        assert pinned.versions("vllm")[-1] == later and pinned.newest("vllm") == later
    finally:
        monkeypatch.delenv("COMPAT_TEST_RELEASES")
        pinned._pinned.cache_clear()
    assert later not in pinned.versions("vllm")


def test_a_test_that_fetches_without_the_network_marker_fails(monkeypatch):
    monkeypatch.setattr(pinned, "_RUNNING", ("tests/x.py::test_y", False))
    with pytest.raises(AssertionError, match=r"tests/x.py::test_y fetches vllm 0.32.0: .*marked network"):
        pinned.fetch("vllm", "0.32.0")


def test_an_unpinned_release_is_refused():
    with pytest.raises(AssertionError, match="not a pinned test release"):
        pinned.fetch("vllm", "0.9.9")


@pytest.mark.network
def test_an_artifact_that_is_not_the_pinned_one_fails(pinned_release, monkeypatch, tmp_path):
    pinned_release("vllm", "0.32.0")  # cached
    table = json.loads(pinned.RELEASES.read_text())
    row = next(r for r in table["vllm"] if r["version"] == "0.32.0")
    row["sha256"] = "0" * 64
    moved = tmp_path / "releases.json"
    moved.write_text(json.dumps(table))
    monkeypatch.setattr(pinned, "RELEASES", moved)
    pinned._pinned.cache_clear()
    try:
        with pytest.raises(AssertionError, match=r"vllm 0.32.0: the artifact fetched .* is not the pinned one"):
            pinned.fetch("vllm", "0.32.0")
    finally:
        pinned._pinned.cache_clear()


@pytest.mark.network
def test_pin_writes_the_verified_artifact(pinned_release, monkeypatch, tmp_path):
    tree = pinned_release("vllm", "0.32.0")
    tool = releases_tool()
    target = tmp_path / "releases.json"
    target.write_text(json.dumps({"vllm": [], "sglang": []}))
    monkeypatch.setattr(tool, "PINNED", target)
    assert tool.main(["pin", "vllm==0.32.0", "--offline"]) == 0
    (row,) = json.loads(target.read_text())["vllm"]
    assert row == {"version": "0.32.0", "artifact": tree.source.detail["artifact"], "sha256": tree.source.detail["sha256"]}
    assert next(r for r in json.loads(pinned.RELEASES.read_text())["vllm"] if r["version"] == "0.32.0") == row


def test_the_unread_facts_of_a_newer_release():
    """tools/releases.py newer: what the newest pinned release had and the newer one lacks, locations aside."""
    tool = releases_tool()
    known = {"version": "1.0", "a": {"present": True, "x": 1, "where": "m/a.py:3"},
             "b": {"present": True, "default": "(2, n)", "sites": [{"at": "m/b.py:1", "t": "p"}, {"at": "m/b.py:9", "t": "q"}]},
             "c": {"present": True, "k": 2}, "d": None}
    new = {"version": "1.1", "a": {"present": True, "x": 1, "where": "m/a.py:30"},
           "b": {"present": True, "default": None, "sites": [{"at": "m/b.py:2", "t": "p"}]},
           "c": {"present": False, "reason": "no class C in m/"}, "d": {"present": True},
           "probe_errors": [{"probe": "e", "error": "SyntaxError at m/e.py:1"}]}
    assert tool.unread_facts(known, new) == [
        "e: the probe raised SyntaxError at m/e.py:1",
        'b.default: not read (was "(2, n)")',
        "b.sites: 1 of 2 entries not found again",
        "c: not found (no class C in m/)",
    ]
