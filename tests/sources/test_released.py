"""Real releases from the real index (marked network): an sdist, and a wheel-only release read through ranges."""

from __future__ import annotations

import json

import pytest

from compat.sources.released import fetch_release


# -- the real index ---------------------------------------------------------------------------


@pytest.mark.network
def test_real_vllm_0_11_0_sdist(tmp_path, monkeypatch):
    monkeypatch.delenv("PIP_CONFIG_FILE")  # this machine's real index configuration
    tree = fetch_release("vllm", "==0.11.0", cache_dir=tmp_path, progress=False)
    assert tree.version == "0.11.0"
    assert tree.exists("vllm/config/speculative.py")
    assert tree.source.detail["artifact"] == "vllm-0.11.0.tar.gz" and tree.source.detail["verified"] == "sha256"
    assert not list(tree.root.rglob("*.cu")) and not list(tree.root.rglob("*.so"))
    assert len(tree.files()) > 500


@pytest.mark.network
def test_real_vllm_0_15_0_wheel_only_through_ranges(tmp_path, monkeypatch):
    monkeypatch.delenv("PIP_CONFIG_FILE")
    tree = fetch_release("vllm", "==0.15.0", cache_dir=tmp_path, progress=False)
    detail = tree.source.detail
    assert detail["artifact"].endswith(".whl")
    record = json.loads((tree.root / "release.json").read_text())
    assert detail["downloaded_bytes"] < record["size"] / 20  # a few MB of a ~460 MB wheel
    assert tree.exists("vllm/config/speculative.py") and len(tree.files()) > 500
    assert not list(tree.root.rglob("*.so"))
