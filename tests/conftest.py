"""Suite-wide settings: the `stress` campaigns run only when asked for (COMPAT_STRESS=1)."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config, items):
    if os.environ.get("COMPAT_STRESS") == "1":
        return
    skip = pytest.mark.skip(reason="a stress campaign: run with COMPAT_STRESS=1")
    for item in items:
        if "stress" in item.keywords:
            item.add_marker(skip)
