"""Fixtures for the patch tests: a tiny hand-written vLLM-shaped tree, and copies of real releases.

`release_tree(version)` copies a real vLLM release, fetched once into the user cache, into
tmp_path (patches never touch the cache).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from patch_trees import release_source, write_mini_vllm


@pytest.fixture
def release_tree(tmp_path, pinned_release):
    """release_tree(version, engine="vllm") -> a private copy of the release (a pinned one; a dir holding vllm/)."""

    def copy(version: str, engine: str = "vllm") -> Path:
        source = release_source(engine, version)
        dest = tmp_path / f"{engine}-{version}"
        shutil.copytree(source / engine, dest / engine, ignore=shutil.ignore_patterns("__pycache__"))
        from compat.sources import open_path

        if open_path(dest).version is None:  # a fetched tree may carry its version only in release.json
            (dest / engine / "_version.py").write_text(f"__version__ = version = {version!r}\n")
        return dest

    return copy


@pytest.fixture
def mini_vllm(tmp_path):
    """A small vLLM-shaped tree (version 0.11.0) that the whitelist and DeepSeek patches apply to."""
    return write_mini_vllm(tmp_path / "mini")
