"""Fixtures for the plugin tests: a real venv with a tiny fake vLLM, and a test-only SGLang patch."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "patches"))  # patch_trees: the tiny vLLM tree and real releases

import plugin_env  # noqa: E402


@pytest.fixture
def fake_venv(tmp_path):
    """(python, site-packages) of a new venv holding the fake vLLM 0.30.0 distribution."""
    python = plugin_env.make_venv(tmp_path / "venv")
    site = plugin_env.site_packages(python)
    plugin_env.write_fake_vllm(site)
    return python, site


@pytest.fixture
def test_sglang_patch(monkeypatch):
    """Registers tests/plugin/sglang_patches/*.py as SGLang patches for one test."""
    import compat.patches.sglang as package

    monkeypatch.setattr(package, "__path__", [*package.__path__, str(HERE / "sglang_patches")])
    yield "sglang-test-nextn-alias"  # the registry reads a folder per package path: once the path is back, so are the patches
    sys.modules.pop("compat.patches.sglang.nextn_alias", None)
