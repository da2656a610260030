#!/usr/bin/env python3
"""Compute where each upstream failure mode holds, on every release, and write it into docs/failure-modes.md.

Each mode (tests/doctor/failure_modes.py: the thread's shapes and the check that answers it) is built once;
its check runs on the probe report of every vLLM release from 0.10.0 and every SGLang release from 0.4.4
(fetched into the user cache, probed once; --offline: the cached listing and releases only). The releases
where the mode holds become the table's "holds in" column, so the column is what the probes say, not a guess.

    python tools/failure_modes.py             print each mode's releases
    python tools/failure_modes.py --write     rewrite the "holds in" column of docs/failure-modes.md
    python tools/failure_modes.py --check     exit 1 when the column differs from what the releases say
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "failure-modes.md"
sys.path.insert(0, str(ROOT / "tests" / "doctor"))

FIRST = {"vllm": "0.10.0", "sglang": "0.4.4"}
# The doc names the newest release of each engine it was computed on; --check and the test read no further,
# so a release published upstream after the table was written shows in `--write`, not as a failing CI run.
READ_UP_TO = re.compile(r"^\*\*Releases read\*\*: vllm 0\.10\.0 - (?P<vllm>\S+), sglang 0\.4\.4 - (?P<sglang>\S+?)\.?$", re.M)


def releases(engine: str, offline: bool, up_to: str | None = None, listed: list[str] | None = None) -> list[str]:
    """The releases the table reads: the index's (or `listed`: the tests give the pinned ones), FIRST to `up_to`."""
    from packaging.version import Version

    from compat.sources.released import list_releases

    return [v for v in (listed if listed is not None else list_releases(engine, offline=offline))
            if Version(v) >= Version(FIRST[engine]) and (up_to is None or Version(v) <= Version(up_to))]


def read_up_to(text: str) -> dict[str, str] | None:
    """engine -> the newest release the doc's table was computed on (None: the doc does not say)."""
    match = READ_UP_TO.search(text)
    return {"vllm": match.group("vllm"), "sglang": match.group("sglang")} if match else None


def reports(engine: str, versions: list[str], offline: bool) -> dict[str, dict[str, Any]]:
    """version -> its probe report (the missing ones probed in parallel first)."""
    from compat.report import build_report, probe_missing
    from compat.sources.released import fetch_release

    trees = {v: fetch_release(engine, f"=={v}", offline=offline, progress=False) for v in versions}
    probe_missing(list(trees.values()))
    return {v: build_report(tree) for v, tree in trees.items()}


def computed(offline: bool = False, up_to: dict[str, str] | None = None,
             listed: dict[str, list[str]] | None = None) -> dict[str, str]:
    """mode key -> `vllm: ...; sglang: ...`, the releases it holds in (up to `up_to` per engine; None: all), of the
    index's releases or of `listed` (engine -> versions: the tests' pinned ones)."""
    import failure_modes as fm

    versions = {engine: releases(engine, offline, (up_to or {}).get(engine), (listed or {}).get(engine))
                for engine in ("vllm", "sglang")}
    engines = {e for m in fm.MODES for e in m.engines}
    by_engine = {engine: reports(engine, versions[engine], offline) for engine in sorted(engines)}
    out = {}
    with tempfile.TemporaryDirectory(prefix="compat-failure-modes-") as tmp:
        for mode in fm.MODES:
            pair = mode.build(Path(tmp) / mode.key)
            tgt, drft = fm.inputs(pair)
            parts = []
            for engine in mode.engines:
                held = {v for v, report in by_engine[engine].items() if fm.holds_on(mode, report, tgt, drft, pair.options)}
                parts.append(f"{engine} {fm.ranges(versions[engine], held)}")
            out[mode.key] = "; ".join(parts) if len(parts) > 1 else parts[0]
    return out


ROW = re.compile(r"^\| *`(?P<key>[a-z0-9-]+)` *\|")


def rewrite(text: str, holds: dict[str, str]) -> str:
    """The doc with each mode row's "holds in" cell (the 5th column) set to what the releases say."""
    lines = []
    for line in text.splitlines():
        match = ROW.match(line)
        if match and match.group("key") in holds:
            cells = line.split("|")
            cells[5] = f" {holds[match.group('key')]} "
            line = "|".join(cells)
        lines.append(line)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite docs/failure-modes.md")
    parser.add_argument("--check", action="store_true", help="exit 1 when the doc differs")
    parser.add_argument("--offline", action="store_true", help="cached releases only")
    args = parser.parse_args(argv)
    text = DOC.read_text()
    holds = computed(args.offline, None if args.write else read_up_to(text))
    if not (args.write or args.check):
        for key, where in holds.items():
            print(f"{key:28} {where}")
        return 0
    new = rewrite(text, holds)
    if args.write:
        newest = {engine: releases(engine, args.offline)[-1] for engine in ("vllm", "sglang")}
        new = READ_UP_TO.sub(f"**Releases read**: vllm 0.10.0 - {newest['vllm']}, sglang 0.4.4 - {newest['sglang']}.", new)
    if args.check:
        if new != text:
            print("docs/failure-modes.md differs from the releases: run python tools/failure_modes.py --write")
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
