"""doctor --manifest as SARIF 2.1.0 (code-scanning annotations at the file and line) and JUnit XML (any CI).

SARIF: one run, tool `compat`, one rule per doctor check and per kind of problem; each failing or warning check
and each problem is a result with its physical location (the manifest, the line of the offending argument).
Levels: a failing check or an error-level problem is "error", a warning "warning", a note "note"; passing and
unchecked checks are not results. Checked against the OASIS schema (sarif-schema-2.1.0.json) in the tests.

JUnit: one testsuite per manifest file, one testcase per serving container and check (a failure for FAIL, a
skipped for unchecked), and one failing testcase per error-level problem.
"""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree as ET

from compat import __version__
from compat.manifests import Outcome

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SARIF_LEVEL = {"fail": "error", "warn": "warning", "error": "error", "warning": "warning", "note": "note"}


def sarif(outcome: Outcome) -> dict[str, Any]:
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for checked in outcome.checked:
        for f in checked.findings:
            if f.verdict not in ("fail", "warn"):
                continue
            rule = rules.setdefault(f.check, {"id": f.check, "name": _name(f.check),
                                              "shortDescription": {"text": f.title}})
            message = f"{checked.serving.name}: {f.detail}"
            fix = (f.fix or {}).get("command") or (f.fix or {}).get("text")
            results.append(_result(rule["id"], SARIF_LEVEL[f.verdict], message + (f" (fix: {fix})" if fix else ""),
                                   f.where.file, f.where.line, f.where.column, list(rules).index(f.check)))
    for p in outcome.problems:
        rule_id = f"manifest-{p.kind}"
        rules.setdefault(rule_id, {"id": rule_id, "name": _name(rule_id),
                                   "shortDescription": {"text": f"manifest input: {p.kind}"}})
        text = p.message + (f" (fix: {p.hint})" if p.hint else "")
        results.append(_result(rule_id, SARIF_LEVEL[p.level], text, p.where.file, p.where.line, p.where.column,
                               list(rules).index(rule_id)))
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "compat", "version": __version__, "rules": list(rules.values())}},
        "results": results,
        "columnKind": "unicodeCodePoints",
    }]}


def _name(rule_id: str) -> str:
    return "".join(part.capitalize() for part in rule_id.replace("_", "-").split("-"))


def _result(rule_id: str, level: str, text: str, file: str, line: int, column: int, index: int) -> dict[str, Any]:
    return {"ruleId": rule_id, "ruleIndex": index, "level": level, "message": {"text": text},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(file)},
                                                "region": {"startLine": max(1, line), "startColumn": max(1, column)}}}]}


def _uri(file: str) -> str:
    from urllib.parse import quote

    return quote(file.replace("\\", "/").removeprefix("./"), safe="/:._-~")


def junit(outcome: Outcome) -> str:
    suites = ET.Element("testsuites", name="compat doctor --manifest")
    by_file: dict[str, ET.Element] = {}

    def suite(file: str) -> ET.Element:
        if file not in by_file:
            by_file[file] = ET.SubElement(suites, "testsuite", name=file)
        return by_file[file]

    for checked in outcome.checked:
        for f in checked.findings:
            case = ET.SubElement(suite(checked.serving.where.file), "testcase", classname=checked.serving.name,
                                 name=f.check, file=f.where.file, line=str(f.where.line))
            if f.verdict == "fail":
                ET.SubElement(case, "failure", message=f.detail[:500], type=f.check).text = f"{f.where}: {f.detail}"
            elif f.verdict == "unchecked":
                ET.SubElement(case, "skipped", message=f.detail[:500])
    for p in outcome.problems:
        case = ET.SubElement(suite(p.where.file), "testcase", classname=p.resource or p.where.file, name=f"manifest-{p.kind}",
                             file=p.where.file, line=str(p.where.line))
        if p.level == "error":
            ET.SubElement(case, "failure", message=p.message[:500], type=p.kind).text = f"{p.where}: {p.message}"
    for element in by_file.values():
        cases = element.findall("testcase")
        element.set("tests", str(len(cases)))
        element.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        element.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
