"""The session's real `vllm serve` processes (tests/engine/vllm_servers.py), shared by every test module that needs a
server: imported by conftest.py, so one set of servers runs per session whoever asks first.

- healthy:   the oracle drafter (right at its first draft position by construction), VLLM_SERVER_DEV_MODE=1 so the
             server reports its speculative config;
- collapsed: the same drafter with d2t zeroed (vLLM then reads draft ids as target ids: never right);
- plain:     no speculation.
Their logs (`server.log`) are what `compat explain` reads in test_explain_engine.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from vllm_servers import VllmServer

ENGINE_DIR = Path(__file__).resolve().parent
PROMPTS = ENGINE_DIR.parents[1] / "compat" / "verify" / "server" / "data" / "chat_prompts.jsonl"


@pytest.fixture(scope="session")
def chat_models(tmp_path_factory, tiny, engine_python) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("server-models")
    target = tiny.write_llama_target(base / "target")
    proc = subprocess.run([str(engine_python), str(ENGINE_DIR / "tiny_chat.py"), str(target.path), str(PROMPTS)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    healthy = tiny.write_eagle3_drafter_vllm(base / "drafter", target)
    collapsed = base / "drafter-d2t-zeroed"
    shutil.copytree(healthy, collapsed)
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(collapsed / "model.safetensors"))
    tensors["d2t"] = tensors["d2t"] * 0
    save_file(tensors, str(collapsed / "model.safetensors"), metadata={"format": "pt"})
    return {"target": target.path, "healthy": healthy, "collapsed": collapsed}


@pytest.fixture(scope="session")
def servers(chat_models, engine_python, tmp_path_factory):
    logs = tmp_path_factory.mktemp("server-logs")

    def spec(drafter: Path) -> dict:
        return {"method": "eagle3", "model": str(drafter), "num_speculative_tokens": 3}

    pool = {"healthy": VllmServer("healthy", engine_python, chat_models["target"], logs / "healthy.log",
                                  spec(chat_models["healthy"]), dev_mode=True),
            "collapsed": VllmServer("collapsed", engine_python, chat_models["target"], logs / "collapsed.log",
                                    spec(chat_models["collapsed"])),
            "plain": VllmServer("plain", engine_python, chat_models["target"], logs / "plain.log")}
    try:
        for server in pool.values():  # together: their imports overlap their waits
            server.start()
        for server in pool.values():
            server.wait_ready()
        print("vllm serve ready after: " + ", ".join(f"{s.name} {s.ready_after_s} s" for s in pool.values()))
        yield pool
    finally:
        for server in pool.values():
            server.stop()
