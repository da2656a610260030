"""`compat explain`'s core: an engine error or log, read against a release's own source.

    explain(lines, tree) -> Explanation      one release
    guess(lines, trees)  -> list[Explanation] each candidate release, with how well the text fits it

The release's raise sites and logger calls come from the `error_sites` probe (through the facts cache, like
every probe); analysis.py reads the text once against them, causes.py says why and what fixes it, and
metrics lines are judged by compat/acceptance.py. The command (compat/commands/explain.py) only reads
arguments and prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from compat.core.errors import SourceError
from compat.explain.analysis import SHORT_INPUT, Evidence, analyse
from compat.explain.causes import UNRELATED, Release, doctor_fix
from compat.explain.findings import catalogued, to_finding
from compat.explain.elsewhere import Elsewhere
from compat.explain.pasted import read_pasted, words_searched
from compat.explain.ranking import rank
from compat.explain.sites import SiteIndex
from compat.explain.text import Line
from compat.release_ref import ReleaseRef
from compat.core.tree import EngineTree

ACCEPTANCE = "acceptance"
PYTHON_ERRORS = ("AttributeError", "TypeError", "KeyError")  # python_errors.py reads these


@dataclass
class Explanation:
    engine: str
    version: str | None
    source: dict
    findings: list[dict] = field(default_factory=list)
    lines: int = 0
    versions_named: list[str] = field(default_factory=list)  # versions the text itself names
    frames_checked: int = 0  # traceback frames in the engine whose shown code was compared with this release
    frames_fitting: int = 0
    nearest: list[dict] = field(default_factory=list)  # lines that match no template: the nearest sites, with scores
    searched: list[str] = field(default_factory=list)  # the names or words of a paste looked up in the release

    @property
    def recognised(self) -> bool:
        return bool(self.findings)

    @property
    def fits(self) -> bool | None:
        """Does the text fit this release: its traceback frames' code is this release's at those lines (None: no
        frame to compare)."""
        return None if not self.frames_checked else self.frames_fitting == self.frames_checked

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "version": self.version, "source": self.source, "findings": self.findings,
                "lines_read": self.lines, "versions_named_in_text": self.versions_named,
                "traceback_frames": {"checked": self.frames_checked, "fit": self.frames_fitting},
                "nearest": self.nearest, "searched_for": self.searched}


def sites_of(tree: EngineTree) -> tuple[dict, SiteIndex]:
    """The release's probe report and its error sites, indexed (the facts cache keeps the probe's answer)."""
    from compat.report import build_report

    report = build_report(tree)
    sites = report.get("error_sites") or {}
    if not sites.get("present"):
        raise SourceError(f"{tree.engine} {tree.version}: no error sites could be read ({sites.get('reason') or sites.get('error')})",
                          hint="name another release with --engine, or a source tree with --path")
    return report, _index(tree, sites)


_INDEXES: dict[tuple, SiteIndex] = {}


def _index(tree: EngineTree, sites: dict) -> SiteIndex:
    key = (tree.engine, str(tree.root), tree.version, len(sites["sites"]))
    index = _INDEXES.get(key)
    if index is None:
        index = _INDEXES[key] = SiteIndex(sites["sites"])
    return index


def explain(lines: Iterable[Line], tree: EngineTree, ref: ReleaseRef | None = None,
            later: Callable[[], tuple[str, ...]] | None = None,
            index_of: Callable[[str], SiteIndex | None] | None = None,
            tree_of: Callable[[str], EngineTree | None] | None = None) -> Explanation:
    """`later()` (the releases after this one, ascending) and `index_of` (version -> its sites) let each check say
    the first release that lets the user's value pass."""
    report, index = sites_of(tree)
    texts: dict[str, list[str] | None] = {}

    def source_line(relpath: str, number: int) -> str | None:
        if relpath not in texts:
            texts[relpath] = tree.text(relpath).split("\n") if tree.exists(relpath) else None
        lines_of = texts[relpath]
        return lines_of[number - 1] if lines_of is not None and 0 < number <= len(lines_of) else None

    elsewhere = Elsewhere(tree)
    evidence = analyse(lines, tree.engine, index, source_line, elsewhere)
    files = (report.get("error_sites") or {}).get("files") or []
    said = [e.text for e in evidence.events] + [line.text for line, _ in evidence.unmatched]
    if any(name in text for text in said for name in PYTHON_ERRORS):  # read only when the text has one (a log rarely)
        from compat.explain import python_errors

        python_errors.read(evidence, tree, files)
    if any("assert" in line.text for line, _ in evidence.unmatched):
        from compat.explain import asserts

        asserts.read(evidence, tree, index, elsewhere)
    nearest = read_pasted(evidence, index, elsewhere)
    searched: list[str] = []
    if evidence.lines <= SHORT_INPUT and evidence.unmatched:  # a paste: the names its words give
        from compat.explain import prose

        searched = prose.read(evidence, tree, index, files)
    release = Release(tree.engine, tree.version, report, tuple(evidence.architectures), ref or ReleaseRef.of_tree(tree),
                      later, index_of, tree, tree_of)
    out = Explanation(tree.engine, tree.version, tree.source.to_json(), lines=evidence.lines,
                      versions_named=evidence.versions, nearest=nearest,
                      searched=searched or words_searched(evidence))
    events = sorted(evidence.events + catalogued(evidence, release), key=lambda e: e.line)
    out.findings = [to_finding(event, release) for event in events]
    acceptance = acceptance_finding(evidence, release)
    if acceptance is not None:
        out.findings.append(acceptance)
    out.findings = rank(out.findings)
    checks = evidence.frame_checks
    out.frames_checked = sum(1 for c in checks if c[3] is not None)
    out.frames_fitting = sum(1 for c in checks if c[3])
    return out


def acceptance_finding(evidence: Evidence, release: Release) -> dict | None:
    series = evidence.series
    intervals = series.intervals if series is not None else []
    if series is None or not intervals:
        return None
    judgement = series.judgement()
    sample = series.sample()
    diagnosis = judgement.diagnosis
    per = ", ".join(f"{p:.3f}" for p in sample.per_position)
    numbers = (f"position-0 acceptance {sample.per_position[0]:.3f} (per position: {per}), mean accepted length "
               f"{sample.mean_accepted_length:.2f}" if sample.per_position and sample.mean_accepted_length else
               f"mean accepted length {sample.mean_accepted_length:.2f}" if sample.mean_accepted_length else "no drafts")
    fix = None
    if judgement.verdict not in ("healthy",):
        fix = doctor_fix(release, "suspects: " + "; ".join(diagnosis.suspects) if diagnosis.suspects else
                         "the counters alone do not say which part is wrong")
    return {"kind": ACCEPTANCE, "site": series.site.location,
            "message": f"{sample.source}: {numbers}", "cause": f"{judgement.verdict}: {judgement.why}. {diagnosis.summary}",
            "fix": fix.to_json() if fix is not None else None, "cause_id": f"acceptance-{diagnosis.pattern}", "exception": None,
            "function": series.site.function, "template": series.site.template, "located_by": "log line",
            "also_at": [], "line": intervals[0].line, "count": series.count,
            "verdict": judgement.verdict, "judgement": judgement.to_json(), "over_time": series.over_time()}


def spec_related(explanation: Explanation) -> bool:
    return any(f["kind"] != UNRELATED for f in explanation.findings)
