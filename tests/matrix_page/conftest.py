"""One small matrix per test session, built by the command line as a user runs it: both engines over a modest
range (two releases each, fetched into the user cache once), four families x four drafter kinds, and a user's
pair (a Kimi-K2 target and a SpecForge drafter, as tools/behaviour_fixtures.py writes them)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "cli"))  # cli_helpers: the installed `compat` script in a subprocess
sys.path.insert(0, str(ROOT / "tools"))  # behaviour_fixtures: targets and drafters as their producers write them

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matrix_site import FAMILIES, RANGES  # noqa: E402


@pytest.fixture(scope="session")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    import behaviour_fixtures as fx

    work = tmp_path_factory.mktemp("pair")
    return fx.write_target(work, "Kimi-K2-Instruct"), fx.write_drafter(work, "kimi-sf", "sf", 61, 0)


@pytest.fixture(scope="session")
def site(tmp_path_factory, pair) -> Path:
    from cli_helpers import compat

    out = tmp_path_factory.mktemp("site")
    args = ["matrix", "--engine", "vllm", "--engine", "sglang", "--target", pair[0], "--drafter", pair[1], "--out", out]
    args += [w for engine, spec in RANGES.items() for w in ("--releases", f"{engine}:{spec}")]
    args += [w for family in FAMILIES for w in ("--family", family)]
    run = compat(*args, timeout=1800)
    assert run.code == 0, run.err
    return out
