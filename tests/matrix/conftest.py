"""Real releases for the matrix: listed from the package index, fetched once into the user cache.

The lists are taken from the index at collection time (or from the cached listing when
offline), so a new engine release joins the matrix without editing anything.
"""

from __future__ import annotations

import os

import pytest
from packaging.version import Version

from compat.report import build_report

FIRST = {"vllm": "0.10.0", "sglang": "0.4.4"}


def releases(engine: str) -> list[str]:
    from compat.sources.released import list_releases

    offline = os.environ.get("COMPAT_OFFLINE") == "1"
    return [v for v in list_releases(engine, offline=offline) if Version(v) >= Version(FIRST[engine])]


_reports: dict[tuple[str, str], dict] = {}


def release_report(engine: str, version: str) -> dict:
    """The probe report of a real release (fetched and probed once per test session)."""
    key = (engine, version)
    if key not in _reports:
        from compat.sources.released import fetch_release

        tree = fetch_release(engine, f"=={version}", progress=False)
        _reports[key] = build_report(tree)
    return _reports[key]


def pytest_generate_tests(metafunc):
    for engine in ("vllm", "sglang"):
        arg = f"{engine}_version"
        if arg in metafunc.fixturenames:
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
