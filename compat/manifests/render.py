"""doctor --manifest's output for people (text) and for machines (JSON); SARIF and JUnit are report_formats.py.

Text: one block per serving container, led by FILE:LINE (editors and CI logs link it), what it runs (engine
release and where it comes from, image, replicas), then each failing or warning check at the line of the argument
it is about, and one line naming the checks left unchecked and the model they need. Problems (a file that is not
YAML, a template, an unknown kind, an image that tells no release, two resources that disagree) follow, each at
its file and line.
"""

from __future__ import annotations

import shlex
from typing import Any

from compat.core.output import plural
from compat.manifests import Outcome
from compat.manifests.checking import NONE, UNCHECKED, Checked

STYLE = {"fail": ("FAIL", "bold red"), "warn": ("WARN", "yellow"), "pass": ("PASS", "green")}
LEVEL = {"error": "bold red", "warning": "yellow", "note": "dim"}


def to_json(outcome: Outcome) -> dict[str, Any]:
    return {
        "files": outcome.scan.files, "documents": outcome.scan.documents,
        "servings": [_serving_json(c) for c in outcome.checked],
        "problems": [p.to_json() for p in outcome.problems],
        "skipped": [w.to_json() for w in outcome.scan.skipped],
        "failed": outcome.failed,
    }


def _serving_json(c: Checked) -> dict[str, Any]:
    s = c.serving
    return {
        "resource": s.resource, "kind": s.kind, "format": s.format, "container": s.container, **s.where.to_json(),
        "engine": c.engine, "version": c.version, "release_from": c.release_from,
        "image": s.image.ref if s.image else None, "replicas": s.replicas,
        "launch": shlex.join([w.text for w in s.words]), "env": {k: w.text for k, w in s.env.items()},
        "target": c.target, "drafter": c.drafter, "models": c.models, "verdict": c.verdict,
        "findings": [{"check": f.check, "title": f.title, "verdict": f.verdict, "detail": f.detail, "fix": f.fix,
                      "engine_location": f.location, **f.where.to_json()} for f in c.findings],
        "fixed_launch": shlex.join(c.fixed_line) if c.fixed_line else None,
        "release_fix": c.release_fix,
    }


def render(outcome: Outcome, console: Any, only_problems: bool = False) -> None:
    from rich.text import Text

    scan = outcome.scan
    console.print(Text.assemble(("compat doctor --manifest", "bold"),
                                f"  {plural(len(scan.files), 'file')}, {plural(scan.documents, 'document')}, "
                                f"{plural(len(outcome.checked), 'serving container')}"))
    for checked in outcome.checked:
        _block(checked, console, only_problems)
    if outcome.problems:
        console.print()
        console.print(Text("problems:", style="bold"))
        for p in outcome.problems:
            console.print(Text.assemble((f"  {p.where}  ", "bold"), (p.level, LEVEL.get(p.level, "")), f"  {p.message}"), soft_wrap=True)
            if p.hint:
                console.print(Text(f"      fix: {p.hint}", style="cyan"), soft_wrap=True)
    failing = sum(1 for c in outcome.checked if any(f.verdict == "fail" for f in c.findings))
    errors = sum(1 for p in outcome.problems if p.level == "error")
    console.print()
    console.print(Text.assemble(("summary: ", "bold"), f"{plural(len(outcome.checked), 'serving container')}, {failing} failing, "
                                f"{plural(errors, 'problem')}" + (f", {plural(len(scan.skipped), 'document')} of no serving format" if scan.skipped else "")))


def _block(c: Checked, console: Any, only_problems: bool) -> None:
    from rich.text import Text

    s = c.serving
    failing = [f for f in c.findings if f.verdict in ("fail", "warn")]
    if only_problems and not failing and not c.problems:
        return
    release = f"{c.engine} {c.version} (from the {c.release_from})" if c.version else f"{c.engine or '?'} (release unknown)"
    console.print()
    console.print(Text.assemble((f"{s.where}  ", "bold"), (s.name, "bold"), f"  {release}",
                                f"  replicas {s.replicas}" if s.replicas else ""), soft_wrap=True)
    if s.image is not None:
        console.print(Text(f"  image   {s.image.ref}", style="dim"), soft_wrap=True)
    for role in ("target", "drafter"):
        name = getattr(c, role)
        model = c.models.get(role, "")
        if name or model:
            console.print(Text(f"  {role:<7} {name or '(none)'}" + (f"  [{model}]" if model.startswith((UNCHECKED, NONE))
                                                                       else ""),
                               style="dim"), soft_wrap=True)
    for f in failing:
        label, style = STYLE[f.verdict]
        console.print(Text.assemble((f"  {label} ", style), (f"{f.where}  ", "bold"), (f.title, "bold")), soft_wrap=True)
        console.print(Text(f"       {f.detail}"), soft_wrap=True)
        if f.fix:
            console.print(Text(f"       fix: {f.fix.get('command') or f.fix.get('text')}", style="cyan"), soft_wrap=True)
    unchecked: dict[str, list[str]] = {}
    for f in c.findings:
        if f.verdict == UNCHECKED:
            unchecked.setdefault(f.detail, []).append(f.check)
    for why, ids in unchecked.items():
        console.print(Text(f"  unchecked ({why}): {', '.join(ids)}", style="yellow"), soft_wrap=True)
    passed = sum(1 for f in c.findings if f.verdict == "pass")
    if c.findings:
        console.print(Text(f"  {plural(passed, 'check')} pass" if passed != 1 else "  1 check passes" + (f"; verdict: {c.verdict}" if c.verdict else ""), style="dim"))
    if c.fixed_line:
        console.print(Text("  fixed line: " + shlex.join(c.fixed_line), style="cyan"), soft_wrap=True)
