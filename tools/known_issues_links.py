#!/usr/bin/env python3
"""The provenance of the known issues' links (compat/known_issues.py): a maintainer's check, outside CI.

    python tools/known_issues_links.py [RESEARCH_DIR]    exit 0: every link recorded or verified; 1: some are not

Each entry's link must be recorded in the research notes (RESEARCH_DIR, default ../shared/research beside the
checkout: they live beside the repository, not in it, so CI cannot read them), as vllm#N / sglang#N or OWNER/REPO#N,
or the entry must say in `verified` what was read upstream and where. CI checks what needs no notes: each link's
form, and that it is a thread of the engine's repository (tests/doctor/test_known_issues_data.py).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHORT = {"vllm-project/vllm": "vllm", "sgl-project/sglang": "sglang"}


def unrecorded(entries, notes: str) -> list[str]:
    """The entries whose link the notes do not record and which say nothing verified upstream."""
    missing = []
    for entry in entries:
        repo, number = re.match(r"^https://github\.com/([\w.-]+/[\w.-]+)/\w+/(\d+)$", entry["link"]).groups()
        recorded = any(re.search(rf"(?<![\w/.-]){re.escape(name)}#{number}(?!\d)", notes) for name in (SHORT.get(repo), repo)
                       if name)
        if not recorded and len(entry.get("verified", "")) <= 40:
            missing.append(f"{entry['id']}: {SHORT.get(repo, repo)}#{number} is not in the notes, nor verified")
    return missing


def main(argv: list[str]) -> int:
    research = Path(argv[0]) if argv else ROOT.parent / "shared" / "research"
    if not research.is_dir():
        print(f"no research notes at {research} (name their folder)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    from compat.known_issues import KNOWN_ISSUES

    missing = unrecorded(KNOWN_ISSUES, "\n".join(p.read_text() for p in sorted(research.glob("*.md"))))
    for line in missing:
        print(line)
    print(f"{len(KNOWN_ISSUES) - len(missing)} of {len(KNOWN_ISSUES)} links recorded in {research} or verified upstream")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
