"""Offline fixtures for the doctor checks: a hand-written probe report in, a verdict out.

No release is fetched and no file is read: the report is the shape `compat probe --json` gives
(the keys each check reads), the target and drafter are built in memory.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from check_inputs import make_ctx  # noqa: E402


@pytest.fixture
def ctx():
    """ctx(engine="vllm", version="0.18.0", report={...overrides}, target={...}, drafter={...}) -> Ctx."""
    return make_ctx


@pytest.fixture
def run():
    """run(check_id, ctx) -> the check's result in its JSON form (through the registry, as the doctor runs it and
    as doctor --json shows it)."""
    from compat.checks import get_check

    return lambda check_id, context: get_check(check_id)(context).to_json()
