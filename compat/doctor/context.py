"""What every doctor check reads: the probe report, the target and drafter, the options, and the verdict words.

A check sees one `Ctx` and returns a `result(...)`; the typed lookups below are the only way checks
reach into the probe report, so a change of a probe's JSON shape is fixed here once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from packaging.version import InvalidVersion, Version

from compat import aux_layers
from compat.interpreter import Interpreter

PASS, FAIL, WARN = "pass", "fail", "warn"

WORKS = "works as is"
WORKS_PATCHED = "works after compat patch"
NEEDS_CONVERT = "needs a converted drafter"
WORKS_PATCHED_CONVERTED = "works after compat patch + a converted drafter"
DOES_NOT_WORK = "does not work"
DEPENDS = "depends on how the drafter was trained (say --layer-ids-convention)"
SOURCE_UNAVAILABLE = "source unavailable"

DEFAULT_SPEC_TOKENS = 3  # vLLM num_speculative_tokens / SGLang --speculative-num-steps
DEFAULT_TOPK = 1  # SGLang --speculative-eagle-topk; with topk 1 draft tokens = steps + 1 (sglang-eagle3.md 1.4)


@dataclass
class Options:
    num_speculative_tokens: int = DEFAULT_SPEC_TOKENS
    topk: int = DEFAULT_TOPK
    extra_spec: dict = field(default_factory=dict)  # more --speculative-config keys the user wants (vLLM)
    # The serving venv the fixes name (`compat patch --python PY`): the one an installed engine was found in, or the
    # --python given beside a release or a tree; None: not known (the fixes say so). Never where the engine is read.
    fixes_python: Interpreter | None = None


@dataclass
class Ctx:
    report: dict
    target: object  # compat.doctor.inputs.Target
    drafter: object  # compat.doctor.inputs.Drafter
    options: Options
    # (fact, key) -> the first later release whose probe fact holds key, "" when none does, None when unknown
    releases: Callable[[str, str], str | None] | None = None

    @property
    def engine(self) -> str:
        return self.report["engine"]

    @property
    def version(self) -> Version | None:
        try:
            return Version(Version(str(self.report.get("version"))).public)
        except InvalidVersion:
            return None

    def at_least(self, gate: Version) -> bool | None:
        return None if self.version is None else self.version >= gate

    def with_drafter(self, drafter) -> "Ctx":
        return Ctx(self.report, self.target, drafter, self.options, self.releases)

    def with_report(self, report: dict) -> "Ctx":
        return Ctx(report, self.target, self.drafter, self.options, self.releases)

    def first_release_with(self, fact: str, key: str) -> str | None:
        """The first release after this one whose probe fact `fact` has `key` ("" none; None: not looked)."""
        return self.releases(fact, key) if self.releases else None

    # -- typed lookups over the probe report ------------------------------------------------------
    def facts(self, key: str) -> list:
        """A list-valued probe fact; [] when the probe found nothing or failed (it reports a dict then)."""
        value = self.report.get(key)
        return value if isinstance(value, list) else []

    def fact(self, key: str) -> dict:
        """A dict-valued probe fact; {} when absent."""
        value = self.report.get(key)
        return value if isinstance(value, dict) else {}

    def probe_error(self, key: str) -> str | None:
        value = self.report.get(key)
        return value.get("error") if isinstance(value, dict) and value.get("error") else None

    def target_entry(self, architecture: str | None = None) -> dict | None:
        return aux_layers.target_entry(self.report, architecture or self.target.architecture or "")

    def flag(self, name: str) -> dict | None:
        for flag in self.facts("cli_flags"):
            if flag.get("name") == name or name in (flag.get("aliases") or []):
                return flag
        return None

    def drafter_location(self, architecture: str | None) -> str | None:
        for entry in self.facts("eagle3_drafter_classes"):
            if entry.get("architecture") == architecture:
                return entry.get("location") or entry.get("registered")
        return None

    def first_location(self, key: str) -> str | None:
        value = self.report.get(key)
        if isinstance(value, list) and value and isinstance(value[0], dict):
            return value[0].get("location") or value[0].get("registered")
        if isinstance(value, dict):
            return value.get("location")
        return None


def result(verdict: str, detail: str, location: str | None = None, **extra) -> dict:
    """A check's answer; the registry adds its id and title."""
    return {"verdict": verdict, "detail": detail, "fix": None, "location": location, **extra}
