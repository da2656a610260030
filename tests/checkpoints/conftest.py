"""Fixtures for the converter tests; the drafter builders live in ckpt_builders.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_builders import write_drafter, write_target


@pytest.fixture
def drafter(tmp_path):
    """drafter(layout, **kw) -> a directory holding that layout's synthetic drafter."""
    counter = iter(range(1000))

    def make(layout: str, **kw) -> Path:
        return write_drafter(tmp_path / f"{layout}-src-{next(counter)}", layout, **kw)

    return make


@pytest.fixture
def llama_target(tmp_path):
    return write_target(tmp_path / "llama-target")


@pytest.fixture
def deepseek_target(tmp_path):
    return write_target(tmp_path / "deepseek-target", family="deepseek")
