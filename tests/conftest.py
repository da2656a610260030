"""Suite-wide settings: each part a test needs beyond the test extra (tests/parts.py) is a marker, added from the
fixture that starts it (a test using `sshd` is `fleet`, `browser` is `page`, ...); a test whose part is missing is
skipped with the command that provides it, or fails under CI=true. The `stress` campaigns run only when asked for
(COMPAT_STRESS=1).

A test that needs a real engine release takes it from tests/pinned.py (tests/releases.json: the pinned releases,
never the index's latest), through the `pinned_release` fixture or `pinned.fetch`; it is `network` (the fixture,
and the `matrix` marker, add it), so `-m "not network"` runs with no index and an empty cache. pinned.fetch fails a
test that fetches without the marker."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # parts: the parts table, for every folder's tests

import parts  # noqa: E402
import pinned  # noqa: E402

SINGLE_PART_MARKERS = {marker: [p for p in parts.PARTS if p.marker == marker] for marker in {p.marker for p in parts.PARTS}}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "pinned_release" in getattr(item, "fixturenames", ()) or item.get_closest_marker("matrix"):
            item.add_marker(pytest.mark.network)
        for part in parts.PARTS:
            if set(part.fixtures) & set(getattr(item, "fixturenames", ())):
                item.add_marker(getattr(pytest.mark, part.marker))
    if os.environ.get("COMPAT_STRESS") == "1":
        return
    skip = pytest.mark.skip(reason="a stress campaign: run with COMPAT_STRESS=1")
    for item in items:
        if "stress" in item.keywords:
            item.add_marker(skip)


def pytest_collection_finish(session):
    """`COMPAT_PARTS_NEEDED=FILE pytest --collect-only ARGS` writes the parts the selected tests need, one name a line:
    tools/test.sh sets up only those (`tools/test.sh tests/cli` builds no engine venv). A test skipped whatever the
    machine has (a stress campaign without COMPAT_STRESS=1) needs nothing; a module that asked for a part's module
    at its top (parts.module) needs that part, even if it was skipped for the want of it."""
    out = os.environ.get("COMPAT_PARTS_NEEDED")
    if not out:
        return
    needed = set(parts.WANTED)
    for item in session.items:
        if any(mark.name == "skip" for mark in item.iter_markers()):
            continue
        needed |= {part.name for part in _needed(item)}
    Path(out).write_text("".join(f"{name}\n" for name in sorted(needed)))


def _needed(item) -> list[parts.Part]:
    """The parts this test needs: those of the fixtures it uses, and of a marker that names one part only."""
    used = set(getattr(item, "fixturenames", ()))
    needed = [p for p in parts.PARTS if set(p.fixtures) & used]
    for marker, of_marker in SINGLE_PART_MARKERS.items():
        if len(of_marker) == 1 and item.get_closest_marker(marker) and of_marker[0] not in needed:
            needed.append(of_marker[0])
    return needed


@pytest.fixture(scope="session")
def pinned_release():
    """pinned_release(engine, version) -> the real release's tree (a pinned one, fetched once into the user cache)."""
    return pinned.fetch


def pytest_runtest_setup(item):
    pinned.running(item.nodeid, item.get_closest_marker("network") is not None)
    for part in _needed(item):
        parts.require(part.name)
