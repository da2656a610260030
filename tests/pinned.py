"""The releases the tests run on: tests/releases.json (written by tools/releases.py), never the index's "latest".

Each release is listed with the artifact compat fetches for it and its sha256: `fetch` gets it into the user cache
(from the index the first time) and fails the test when what was fetched is not the pinned artifact. Listing the
releases reads only this file, so collecting the matrix and network tests needs no network and no cache, and a
release published upstream tomorrow changes nothing here. A maintainer tries newer ones with
`python tools/releases.py newer --matrix`, which names them in COMPAT_TEST_RELEASES (engine==version, comma
separated): they join the lists for that run only.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from packaging.version import Version

RELEASES = Path(__file__).resolve().parent / "releases.json"
MATRIX_FROM = {"vllm": "0.10.0", "sglang": "0.4.4"}  # the matrix's first release of each engine (tests/matrix)
_RUNNING: tuple[str, bool] | None = None  # the test being set up (tests/conftest.py), and whether it is `network`


def running(nodeid: str, network: bool) -> None:
    """Told by tests/conftest.py before each test's fixtures are set up: `fetch` refuses a test not marked network."""
    global _RUNNING
    _RUNNING = (nodeid, network)


@lru_cache(maxsize=1)
def _pinned() -> dict[str, dict[str, dict]]:
    table = json.loads(RELEASES.read_text())
    out = {engine: {row["version"]: row for row in rows} for engine, rows in table.items()}
    for spec in filter(None, os.environ.get("COMPAT_TEST_RELEASES", "").split(",")):
        engine, _, version = spec.strip().partition("==")
        out.setdefault(engine, {}).setdefault(version, {"version": version, "artifact": None, "sha256": None})
    return out


def versions(engine: str, first: str | None = None) -> list[str]:
    """The pinned releases of `engine` (from `first` on), oldest first."""
    found = [v for v in _pinned().get(engine, {}) if first is None or Version(v) >= Version(first)]
    return sorted(found, key=Version)


def matrix(engine: str, since: str | None = None, before: str | None = None) -> list[str]:
    """The matrix's releases of `engine` (from MATRIX_FROM): those from `since`, or those before `before` (the releases
    where a fact exists, and the ones where it does not, for a test that names its releases)."""
    return [v for v in versions(engine, MATRIX_FROM[engine]) if (since is None or Version(v) >= Version(since))
            and (before is None or Version(v) < Version(before))]


def newest(engine: str) -> str:
    return versions(engine)[-1]


def fetch(engine: str, version: str):
    """The release's tree, fetched once into the user cache; a test fails when the artifact is not the pinned one."""
    from compat.sources.released import fetch_release

    row = _pinned().get(engine, {}).get(version)
    if row is None:
        raise AssertionError(f"{engine} {version} is not a pinned test release (tests/releases.json; "
                             f"python tools/releases.py pin {engine}=={version})")
    if _RUNNING is not None and not _RUNNING[1]:
        raise AssertionError(f"{_RUNNING[0]} fetches {engine} {version}: a test that needs a release is marked network "
                             "(pytest.mark.network, or the pinned_release fixture), so that -m 'not network' runs "
                             "with no index and an empty cache")
    offline = os.environ.get("COMPAT_OFFLINE") == "1"
    tree = fetch_release(engine, f"=={version}", progress=False, offline=offline)
    got = tree.source.detail.get("sha256")
    if row["sha256"] is not None and got != row["sha256"]:
        raise AssertionError(f"{engine} {version}: the artifact fetched ({tree.source.detail.get('artifact')}, sha256 "
                             f"{got}) is not the pinned one ({row['artifact']}, sha256 {row['sha256']})")
    return tree
