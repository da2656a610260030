"""Suite-wide settings: each part a test needs beyond the test extra (tests/parts.py) is a marker, added from the
fixture that starts it (a test using `sshd` is `fleet`, `browser` is `page`, ...); a test whose part is missing is
skipped with the command that provides it, or fails under CI=true. The `stress` campaigns run only when asked for
(COMPAT_STRESS=1); under CI=true they are the only tests that may skip (any other skip fails), and the summary
counts them apart.

A test that needs a real engine release takes it from tests/pinned.py (tests/releases.json: the pinned releases,
never the index's latest), through the `pinned_release` fixture or `pinned.fetch`; it is `network` (the fixture,
and the `matrix` marker, add it), so `-m "not network"` runs with no index and an empty cache. pinned.fetch fails a
test that fetches without the marker."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # parts: the parts table, for every folder's tests

import parts  # noqa: E402
import pinned  # noqa: E402

STRESS_SKIP = "a stress campaign: run with COMPAT_STRESS=1"
# pytest-xdist (tools/test.sh runs two workers): tests sharing a session's costly part run on one worker, so it
# starts once (the engine server of tests/engine, the sshd and Ray cluster of tests/fleet); a file's tests stay
# together (its module fixtures are built once); the rest is shared out.
SHARED_PARTS = {"engine": "engine", "fleet": "fleet", "peers": "peers"}


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist: the terminal width the controller had, for the worker (which sets its own COLUMNS otherwise)."""
    node.workerinput["compat_columns"] = os.environ.get("COLUMNS")


def pytest_configure(config):
    """A run started in the background (`pytest &` from a shell without job control) inherits SIGINT ignored, and
    every process the tests start would too: the ctrl-c tests would then prove nothing. Take the signal back."""
    config.addinivalue_line("markers", "xdist_group(name): the tests one pytest-xdist worker runs together")
    worker = getattr(config, "workerinput", None)
    if worker is not None:  # a pytest-xdist worker: the commands the tests start see the controller's width
        columns = worker.get("compat_columns")
        if columns is None:
            os.environ.pop("COLUMNS", None)
            os.environ.pop("LINES", None)
        else:
            os.environ["COLUMNS"] = columns
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "pinned_release" in getattr(item, "fixturenames", ()) or item.get_closest_marker("matrix"):
            item.add_marker(pytest.mark.network)
        for part in parts.PARTS:
            if set(part.fixtures) & set(getattr(item, "fixturenames", ())):
                item.add_marker(getattr(pytest.mark, part.marker))
    for item in items:  # read by pytest-xdist's --dist loadgroup; without it, a marker that changes nothing
        item.add_marker(pytest.mark.xdist_group(_worker_group(item)))
    if os.environ.get("COMPAT_STRESS") != "1":
        skip = pytest.mark.skip(reason=STRESS_SKIP)
        for item in items:
            if "stress" in item.keywords:
                item.add_marker(skip)
    census = os.environ.get("COMPAT_MARKER_CENSUS")
    if census:  # tests/test_parts.py: what each marker selects, from a collection in a child process
        Path(census).write_text(json.dumps(parts.marker_census(items)))


def _worker_group(item) -> str:
    """The tests one worker runs together: those of a shared part's folder, else those of one file."""
    path = Path(str(item.fspath)).resolve()
    here = Path(__file__).resolve().parent
    relative = path.relative_to(here) if path.is_relative_to(here) else path
    return SHARED_PARTS.get(relative.parts[0], relative.as_posix())


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
    """The parts this test needs (tests/parts.py `needed`): a bare marker that several parts share fails the test."""
    marked: dict[str, tuple] = {}
    for marker in item.iter_markers():
        if parts.of_marker(marker.name):
            marked[marker.name] = marked.get(marker.name, ()) + tuple(marker.args)
    try:
        return parts.needed(set(getattr(item, "fixturenames", ())), marked)
    except ValueError as error:
        pytest.fail(f"{item.nodeid}: {error}", pytrace=False)


@pytest.fixture(scope="session")
def pinned_release():
    """pinned_release(engine, version) -> the real release's tree (a pinned one, fetched once into the user cache)."""
    return pinned.fetch


@pytest.fixture(scope="session")
def torch():
    """torch, for the tests that write pytorch_model.bin drafters (the `torch` part: its marker comes with it)."""
    return parts.module("torch")


def pytest_runtest_setup(item):
    pinned.running(item.nodeid, item.get_closest_marker("network") is not None)
    for part in _needed(item):
        parts.require(part.name)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true a skip fails, but a stress campaign's: CI sets up every part, so nothing else may be left out."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and parts.in_ci() and "stress" not in item.keywords and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = (f"skipped under CI=true, where only the stress campaigns (COMPAT_STRESS) may be: {reason}")


def pytest_terminal_summary(terminalreporter):
    """The skips, the stress campaigns counted apart (under CI=true they are the only ones)."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not (skipped or terminalreporter.stats.get("passed") or terminalreporter.stats.get("failed")):
        return
    stress = sum(1 for report in skipped if "stress" in getattr(report, "keywords", {}))
    terminalreporter.write_line(f"skipped: {stress} stress campaign{'s' * (stress != 1)} (COMPAT_STRESS=1 runs them), "
                                f"{len(skipped) - stress} other test{'s' * (len(skipped) - stress != 1)}"
                                + (" (CI=true fails these)" if len(skipped) > stress else ""))
