"""The done-when of doctor --manifest: a repository in every format compat reads (tests/manifests/repo/, each
file citing its documented shape: Kubernetes and Kustomize, LeaderWorkerSet, KServe InferenceService +
ServingRuntime and LLMInferenceService, llm-d ModelService values, vLLM production-stack values, Ray Serve,
docker compose, SkyPilot) checked in one command: every launch line found, every release read from its tag, every
seeded mistake (a line marked `# seeded`, or the line after such a comment) reported at its file and line.

Engine releases are real (vLLM 0.10.1, 0.11.0, 0.11.1, 0.32.0 and SGLang 0.5.8, read from their released source); the
models are tiny ones written for the paths the manifests name (`--model-root /models=DIR`, `--model-root DIR` for
Hugging Face ids); the LLMInferenceService's models are on no machine and stay unchecked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from manifest_repo import REPO

pytestmark = pytest.mark.network  # the releases' source, fetched once into the user cache

EXPECTED = {  # (file, resource) -> (engine, version, replicas)
    ("k8s/deployment.yaml", "Deployment/qwen-eagle3"): ("vllm", "0.11.0", "2"),
    ("k8s/overlays/spec-decoding/patch-spec-decoding.yaml", "Deployment/qwen-eagle3-canary"): ("vllm", "0.11.1", "1"),
    ("lws/lws.yaml", "LeaderWorkerSet/vllm-multinode leaderTemplate"): ("vllm", "0.32.0", "2 groups x 2 pods"),
    ("kserve/runtime.yaml", "InferenceService/llama-eagle3"): ("vllm", "0.11.0", "2"),
    ("kserve/llmisvc.yaml", "LLMInferenceService/qwen3-eagle3"): ("vllm", "0.32.0", "2"),
    ("llm-d/values.yaml", "values decode.containers[0]"): ("vllm", "0.32.0", "3"),
    ("llm-d/values.yaml", "values prefill.containers[0]"): ("vllm", None, "1"),  # ghcr.io/llm-d/llm-d-cuda:v0.4.0
    ("production-stack/values.yaml", "values servingEngineSpec.modelSpec[0] (llama)"): ("vllm", "0.10.1", "1"),
    ("ray/serve.yaml", "applications[0] llm_configs[0]"): ("vllm", "0.11.0", "1-4"),
    ("compose/docker-compose.yaml", "service sglang"): ("sglang", "0.5.8", "1"),
    ("skypilot/serve.yaml", "task vllm-eagle3"): ("vllm", "0.32.0", "2"),
    ("bad/latest-image.yaml", "Deployment/untagged"): ("vllm", None, "1"),
}


def seeded() -> set[tuple[str, int]]:
    """(file, line) of every seeded mistake: a line with `# seeded`, or the line after a comment that is only that."""
    out = set()
    for path in REPO.rglob("*.yaml"):
        for number, row in enumerate(path.read_text().splitlines(), 1):
            if "# seeded" in row:
                out.add((str(path.relative_to(REPO)), number + 1 if row.lstrip().startswith("#") else number))
    return out


@pytest.fixture(scope="module")
def report(model_root, tmp_path_factory):
    import json
    import os
    import subprocess
    import sys

    hub = model_root.parent / "no-hub"
    result = subprocess.run([sys.executable, "-m", "compat", "doctor", "--manifest", ".", "--model-root", f"/models={model_root}",
                             "--model-root", str(model_root), "--layer-ids-convention", "capture-before", "--json"],
                            cwd=REPO, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "HF_HUB_CACHE": str(hub)})
    assert result.returncode == 1, result.stderr  # seeded mistakes: it fails
    return json.loads(result.stdout)


def test_every_launch_line_is_found_with_its_release_and_replicas(report):
    found = {(s["file"], s["resource"]): (s["engine"], s["version"], s["replicas"]) for s in report["servings"]}
    assert found == EXPECTED
    by = {(s["file"], s["resource"]): s for s in report["servings"]}
    assert by["lws/lws.yaml", "LeaderWorkerSet/vllm-multinode leaderTemplate"]["launch"].startswith("vllm serve /models/llama-70b")
    assert by["skypilot/serve.yaml", "task vllm-eagle3"]["launch"].startswith("vllm serve /models/sky-target --port 8000")
    assert by["ray/serve.yaml", "applications[0] llm_configs[0]"]["release_from"] == "pinned install"
    assert by["k8s/deployment.yaml", "Deployment/qwen-eagle3"]["env"] == {"VLLM_LOGGING_LEVEL": "INFO"}
    # the InferenceService runs the ServingRuntime's command with its own args appended (KServe's merge)
    isvc = by["kserve/runtime.yaml", "InferenceService/llama-eagle3"]["launch"]
    assert isvc.startswith("python3 -m vllm.entrypoints.openai.api_server --port=8080") and "--num-speculative-tokens=3" in isvc


def test_every_seeded_mistake_is_reported_at_its_file_and_line(report):
    reported = {(f["file"], f["line"]) for s in report["servings"] for f in s["findings"] if f["verdict"] == "fail"}
    reported |= {(p["file"], p["line"]) for p in report["problems"] if p["level"] in ("error", "warning")}
    missing = seeded() - reported
    assert not missing, sorted(reported)


def test_each_seeded_mistake_is_the_right_finding(report):
    def finding(file, check):
        return next(f for s in report["servings"] for f in s["findings"] if f["file"] == file and f["check"] == check
                    and f["verdict"] == "fail")

    assert "'attention_backend' is ignored silently" in finding("k8s/deployment.yaml", "launch-arguments")["detail"]
    assert "unrecognized arguments: -sc" in finding("k8s/overlays/spec-decoding/patch-spec-decoding.yaml", "launch-arguments")["detail"]
    assert "'disable_by_batch_size'" in finding("kserve/llmisvc.yaml", "launch-arguments")["detail"]
    assert "invalid choice: 'eagle3'" in finding("compose/docker-compose.yaml", "launch-arguments")["detail"]
    assert "'kv_cache_dtype' is ignored silently" in finding("ray/serve.yaml", "launch-arguments")["detail"]
    kinds = {(p["file"], p["kind"]) for p in report["problems"]}
    assert {("bad/not-yaml.yaml", "parse"), ("bad/helm-template.yaml", "template"), ("bad/unknown-kind.yaml", "kind"),
            ("bad/latest-image.yaml", "image"), ("llm-d/values.yaml", "image"), ("production-stack/values.yaml", "mismatch"),
            ("k8s/deployment.yaml", "mismatch")} <= kinds


def test_models_not_here_are_unchecked_never_guessed(report):
    llmisvc = next(s for s in report["servings"] if s["file"] == "kserve/llmisvc.yaml")
    assert llmisvc["models"]["target"].startswith("unchecked: org/qwen3-target is not on this machine")
    unchecked = {f["check"] for f in llmisvc["findings"] if f["verdict"] == "unchecked"}
    assert {"target-architecture", "drafter-architecture", "layer-ids"} <= unchecked
    assert not any(f["verdict"] == "pass" and f["check"] in ("target-architecture", "layer-ids") for f in llmisvc["findings"])
    local = next(s for s in report["servings"] if s["resource"] == "Deployment/qwen-eagle3")
    assert not any(f["verdict"] == "unchecked" for f in local["findings"])  # --model-root found both


def test_the_text_report_names_each_finding_at_file_and_line(model_root, doctor):
    code, out, _ = doctor("--manifest", str(REPO / "k8s"), "--model-root", f"/models={model_root}",
                          "--layer-ids-convention", "capture-before")
    assert code == 1
    line = next(n for n, row in enumerate((REPO / "k8s/deployment.yaml").read_text().splitlines(), 1) if "attention_backend" in row
                and not row.lstrip().startswith("#"))
    assert re.search(rf"FAIL \S*k8s/deployment.yaml:{line}\s+launch line", out), out
    assert "fixed line: VLLM_LOGGING_LEVEL=INFO python3 -m vllm.entrypoints.openai.api_server" in out
