#!/usr/bin/env python3
"""The releases the tests run on (tests/releases.json), and the ones upstream published since (for maintainers,
outside CI: it needs the package index).

tests/releases.json lists, per engine, every release the matrix and network tests run on, each with the artifact
compat fetches for it (the file name and its sha256): a release published upstream later changes nothing in CI, and
an artifact replaced upstream is caught (tests/pinned.py compares the sha256 of what was fetched).

    python tools/releases.py newer                 releases on the index newer than the newest pinned one, each
                                                   fetched and probed: the facts compat read on the newest
                                                   pinned release and could not read on it
    python tools/releases.py newer --matrix        ... and the matrix tests run on them too (pytest -m matrix, with
                                                   COMPAT_TEST_RELEASES naming them: tests/pinned.py adds them)
    python tools/releases.py pin vllm==0.35.0      add a release to tests/releases.json (fetched, its sha256 read from
                                                   the verified download), once the tests pass on it

compat itself still serves any release a user names; only the tests are pinned.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PINNED = ROOT / "tests" / "releases.json"


def load() -> dict[str, list[dict]]:
    return json.loads(PINNED.read_text())


def save(pinned: dict[str, list[dict]]) -> None:
    from packaging.version import Version

    for engine in pinned:
        pinned[engine] = sorted(pinned[engine], key=lambda r: Version(r["version"]))
    PINNED.write_text(json.dumps(pinned, indent=1) + "\n")


def entry(engine: str, version: str, *, offline: bool = False) -> dict:
    """The pinned entry of a release: fetched (or read from the cache), its artifact and sha256 as verified."""
    from compat.sources.released import fetch_release

    tree = fetch_release(engine, f"=={version}", progress=False, offline=offline)
    detail = tree.source.detail
    return {"version": version, "artifact": detail["artifact"], "sha256": detail["sha256"]}


# what a report carries besides facts: not compared
NOT_FACTS = ("engine", "version", "source", "version_in_source", "probe_seconds", "probe_errors", "compat_patches",
             "compat_plugin")
_LOCATION = re.compile(r"[\w./-]+\.py(?::\d+)?")


def _unlocated(value: Any) -> Any:
    """The value with every file:line in it written LOC: a newer release moves lines, not facts."""
    if isinstance(value, dict):
        return {k: _unlocated(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unlocated(v) for v in value]
    return _LOCATION.sub("LOC", value) if isinstance(value, str) else value


def _missing(known: Any, new: Any, path: str) -> list[str]:
    """Where `new` lacks what `known` has: a value now null or gone, a fact no longer present, list entries not found."""
    if known in (None, {}, []) or known is False:
        return []
    if new is None:
        return [f"{path}: not read (was {json.dumps(known, default=str)[:60]})"]
    if isinstance(known, dict) and isinstance(new, dict):
        if known.get("present") is True and new.get("present") is False:
            return [f"{path}: not found ({new.get('reason') or 'no reason given'})"]
        return [line for key, value in known.items()
                for line in _missing(value, new.get(key), f"{path}.{key}")]
    if isinstance(known, list) and isinstance(new, list):
        left = [json.dumps(_unlocated(v), sort_keys=True) for v in new]
        lost = 0
        for value in known:
            text = json.dumps(_unlocated(value), sort_keys=True)
            if text in left:
                left.remove(text)
            else:
                lost += 1
        return [f"{path}: {lost} of {len(known)} entries not found again"] if lost else []
    return []


def unread_facts(known: dict, new: dict) -> list[str]:
    """The facts compat read on `known` (the newest pinned release's report) but not on `new` (a newer release's):
    each fact's path, what is missing, and the probes that raised. Upstream may have removed a fact, or moved it
    where the probe does not look: a maintainer reads the lines, the code decides."""
    out = [f"{e.get('probe') or e.get('key')}: the probe raised {e.get('error')}" for e in new.get("probe_errors") or []]
    for key, value in known.items():
        if key not in NOT_FACTS:
            out += _missing(value, new.get(key), key)
    return out


def _report(engine: str, version: str) -> dict:
    from compat.report import build_report
    from compat.sources.released import fetch_release

    return json.loads(json.dumps(build_report(fetch_release(engine, f"=={version}", progress=False)), default=str))


def newer(args: argparse.Namespace) -> int:
    from packaging.version import Version

    from compat import engines
    from compat.sources.released import list_releases

    pinned = load()
    found: list[tuple[str, str]] = []
    for engine in engines.names():
        if not pinned.get(engine):
            print(f"{engine}: no pinned release to compare with (python tools/releases.py pin {engine}==VERSION)")
            continue
        newest = max(Version(r["version"]) for r in pinned[engine])
        for version in list_releases(engine):
            if Version(version) > newest and not Version(version).is_prerelease:
                found.append((engine, version))
    if not found:
        print("no release on the index is newer than the pinned ones")
        return 0
    status = 0
    known: dict[str, tuple[str, dict]] = {}
    for engine, version in found:
        if engine not in known:
            newest_pinned = max((r["version"] for r in pinned[engine]), key=Version)
            known[engine] = (newest_pinned, _report(engine, newest_pinned))
        unread = unread_facts(known[engine][1], _report(engine, version))
        print(f"{engine} {version}: " + (f"every fact read on {known[engine][0]} read again" if not unread else
                                          f"{len(unread)} facts read on {known[engine][0]} not read"))
        for line in unread:
            print(f"  - {line}")
        status = status or (1 if unread else 0)
    if args.matrix:
        extra = ",".join(f"{e}=={v}" for e, v in found)
        print(f"running the matrix tests on {extra}")
        env = {**os.environ, "COMPAT_TEST_RELEASES": extra}
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "matrix", "-k", " or ".join(v for _, v in found)],
                              cwd=ROOT, env=env)
        status = status or done.returncode
    return status


def pin(args: argparse.Namespace) -> int:
    pinned = load()
    for spec in args.releases:
        engine, _, version = spec.partition("==")
        if not version:
            raise SystemExit(f"pin: {spec!r}: give ENGINE==VERSION")
        rows = [r for r in pinned.setdefault(engine, []) if r["version"] != version]
        pinned[engine] = rows + [entry(engine, version, offline=args.offline)]
        print(f"pinned {engine} {version}")
    save(pinned)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="command", required=True)
    new = sub.add_parser("newer", help="releases on the index newer than the pinned ones, and the facts not read")
    new.add_argument("--matrix", action="store_true", help="also run the matrix tests on them")
    add = sub.add_parser("pin", help="add releases to tests/releases.json")
    add.add_argument("releases", nargs="+", metavar="ENGINE==VERSION")
    add.add_argument("--offline", action="store_true", help="only from the user cache")
    args = parser.parse_args(argv)
    return newer(args) if args.command == "newer" else pin(args)


if __name__ == "__main__":
    raise SystemExit(main())
