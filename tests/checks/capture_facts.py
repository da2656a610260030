"""Write the drafter facts the offline check tests use, from real releases (run when a probe changes):

    python tests/checks/capture_facts.py

The facts are what `compat probe --json` reports for a few releases, only the keys the checks read
about drafters; tests/checks/test_captured_facts.py (network) fails when they drift from the probes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/pinned.py: the pinned releases

FACTS_DIR = Path(__file__).resolve().parent / "facts"
KEYS = {"vllm": ("drafter_loader", "drafter_architecture_rename", "method_autodetection"),
        "sglang": ("drafter_loader", "drafter_architecture_rename")}
RELEASES = [("vllm", "0.10.1"), ("vllm", "0.10.2"), ("vllm", "0.11.0"), ("vllm", "0.18.0"), ("vllm", "0.22.0"), ("vllm", "0.30.0"),
            ("sglang", "0.5.8"), ("sglang", "0.5.12")]


def facts(engine: str, version: str) -> dict:
    import pinned
    from compat.report import build_report

    report = build_report(pinned.fetch(engine, version))
    return {key: report[key] for key in KEYS[engine]}


def main() -> int:
    FACTS_DIR.mkdir(exist_ok=True)
    for engine, version in RELEASES:
        (FACTS_DIR / f"{engine}-{version}.json").write_text(json.dumps(facts(engine, version), indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
