"""Issue 40, point 5: doctor --manifest cites the argument a finding is about, and names the fix that lasts there.

A refused value (`--max-model-len lots`) was cited at the `--speculative-config` item, in the text, SARIF and JUnit
reports alike; and a patch was fixed with `compat patch`, which inside a container is undone by its next restart,
where `compat plugin manifest` applies it at every start (one manifest with every patch the container needs).
Real release: vLLM 0.16.0 (pinned); the models are compat's samples (Kimi-K2-Instruct and its drafter)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from compat.samples import write_samples

MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: kimi
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.16.0
        args:
        - --model
        - /models/Kimi-K2-Instruct
        - --speculative-config
        - '{"method": "eagle3", "model": "/models/kimi-k2-eagle3", "num_speculative_tokens": 3}'
        - --max-model-len
        - lots
"""
LOTS = MANIFEST.splitlines().index("        - lots") + 1
SPEC = MANIFEST.splitlines().index("        - --speculative-config") + 2


@pytest.fixture
def deployment(tmp_path, pinned_release):
    pinned_release("vllm", "0.16.0")
    write_samples(tmp_path / "models")
    (tmp_path / "kimi.yaml").write_text(MANIFEST)
    return tmp_path


def _run(doctor, deployment, monkeypatch, *extra):
    monkeypatch.chdir(deployment)
    return doctor("--manifest", "kimi.yaml", "--model-root", f"/models={deployment / 'models'}", *extra)


def test_a_refused_value_is_cited_at_its_own_line_in_every_format(doctor, deployment, monkeypatch):
    code, out, _ = _run(doctor, deployment, monkeypatch)
    assert code == 1 and f"FAIL kimi.yaml:{LOTS}  launch line" in out, out
    _, sarif, _ = _run(doctor, deployment, monkeypatch, "--format", "sarif")
    refused = next(r for r in json.loads(sarif)["runs"][0]["results"] if "invalid int value: 'lots'" in r["message"]["text"])
    assert refused["locations"][0]["physicalLocation"]["region"]["startLine"] == LOTS
    _, junit, _ = _run(doctor, deployment, monkeypatch, "--format", "junit")
    failures = [f.text or "" for f in ET.fromstring(junit).iter("failure")]
    assert any(f"kimi.yaml:{LOTS}" in text and "'lots'" in text for text in failures), failures
    # the refused value is not cited at the speculative config's line; what is cited there is the release's own
    # validation of that config (it refuses the Kimi target on 0.16.0)
    at_spec = [line for line in out.splitlines() if f"FAIL kimi.yaml:{SPEC}  launch line" in line]
    assert SPEC != LOTS and all("the release's own validation" in line for line in at_spec), at_spec


def test_a_patch_is_fixed_with_the_plugin_manifest_not_compat_patch(doctor_json, deployment, monkeypatch):
    monkeypatch.chdir(deployment)
    code, report = doctor_json("--manifest", "kimi.yaml", "--model-root", f"/models={deployment / 'models'}")
    fixes = [f["fix"]["command"] for s in report["servings"] for f in s["findings"]
             if f["verdict"] == "fail" and (f.get("fix") or {}).get("kind") == "patch"]
    assert code == 1 and len(fixes) == 2, report
    one = ("compat plugin manifest --engine vllm --image vllm/vllm-openai:v0.16.0 --name kimi "
           "--select vllm-eagle3-whitelist --select vllm-deepseek-eagle3-aux > compat-plugin.yaml")
    assert fixes == [one, one]  # the same manifest from each finding: two would each add the init container
