"""Fixtures of the command-line tests (tests/cli): see cli_helpers.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_helpers import isolated_env, kimi_pair  # noqa: E402


@pytest.fixture
def env(tmp_path):
    """The environment of a user with an empty compat cache and no pip config (no network needed)."""
    return isolated_env(tmp_path)


@pytest.fixture
def pair(tmp_path):
    """(target dir, drafter dir): Kimi-K2 and a SpecForge drafter for it."""
    return kimi_pair(tmp_path / "models")
