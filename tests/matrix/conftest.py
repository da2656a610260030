"""Real releases for the matrix: the pinned ones (tests/releases.json, read by tests/pinned.py), fetched once into
the user cache and checked against their pinned sha256.

Collection reads only the pinned list: no network, no cache. A release published upstream joins the matrix when a
maintainer pins it (python tools/releases.py newer --matrix, then pin).
"""

from __future__ import annotations

import pytest

import pinned
from compat.report import build_report

def releases(engine: str) -> list[str]:
    return pinned.matrix(engine)


_reports: dict[tuple[str, str], dict] = {}


def release_report(engine: str, version: str) -> dict:
    """The probe report of a real release (fetched and probed once per test session)."""
    key = (engine, version)
    if key not in _reports:
        _reports[key] = build_report(pinned.fetch(engine, version))
    return _reports[key]


def pytest_generate_tests(metafunc):
    """ENGINE_version runs over every release of the matrix, unless the test names its own (the releases where the
    fact it holds exists: `@pytest.mark.parametrize("vllm_version", pinned.matrix("vllm", since=FIRST))`)."""
    named = set()
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0]
        named |= {n.strip() for n in (names.split(",") if isinstance(names, str) else names)}
    for engine in ("vllm", "sglang"):
        arg = f"{engine}_version"
        if arg in metafunc.fixturenames and arg not in named:
            metafunc.parametrize(arg, releases(engine))


@pytest.fixture
def vllm_report(vllm_version):
    return release_report("vllm", vllm_version)


@pytest.fixture
def sglang_report(sglang_version):
    return release_report("sglang", sglang_version)


@pytest.fixture(scope="session")
def report_of():
    """report_of(engine, version): a release's probe report, for tests that choose their releases themselves."""
    return release_report


@pytest.fixture(scope="session")
def versions_of():
    """versions_of(engine): the releases the matrix runs, in order."""
    return releases
