"""Where a fact's evidence is upstream: the file and line a probe read, at the release's own tag.

A check's `location` is a path inside the engine's package as the release ships it (`vllm/config/speculative.py:90`,
`sglang/srt/server_args.py:412`). Where an engine keeps its package in its repository and how it tags a release are
fields of its unit (compat/engines/: REPOSITORY, SOURCE_PREFIX, TAG): vLLM keeps it at the top and tags `v0.32.0`;
SGLang keeps it under `python/` and tags `v0.5.8`, `v0.4.6.post4` (the release's own version with a `v`).
A location outside the engine (compat's own data, e.g. the known issues) has no upstream file: its evidence is the
issue threads it names (`issue_links`).
"""

from __future__ import annotations

import re
from typing import Any

from compat import engines

_LOCATION = re.compile(r"^(?P<path>[A-Za-z_]\w*/[\w./-]+\.py)(?::(?P<line>\d+))?")


def tag(engine: str, version: str) -> str:
    return engines.get(engine).release_tag(version)


def evidence_url(engine: str, version: str, location: str | None) -> str | None:
    """https://github.com/<repo>/blob/<tag>/<path>#L<line> for a location in the engine's own package; else None."""
    unit = engines.find(engine)
    if not location or unit is None:
        return None
    match = _LOCATION.match(location)
    if match is None or not match.group("path").startswith(unit.import_name + "/"):
        return None
    return unit.source_url(match.group("path"), version, int(match.group("line")) if match.group("line") else None)


def issue_links(check: dict[str, Any]) -> list[dict[str, str]]:
    """The upstream threads a check names (the known issues it found), as {title, url}."""
    return [{"title": str(issue.get("title") or issue.get("id")), "url": issue["link"]}
            for issue in check.get("issues") or [] if isinstance(issue, dict) and str(issue.get("link", "")).startswith("https://")]
