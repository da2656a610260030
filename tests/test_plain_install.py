"""A plain `pip install .` (no extras: no torch, numpy or safetensors) runs every command's main job.

The venv is made by the test (network: the package index serves packaging, libcst and rich); the
inputs are written by this interpreter, which has the test extras. Any undeclared import shows up
as a traceback here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("plain") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    proc = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(ROOT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    listed = subprocess.run([str(venv / "bin" / "pip"), "list", "--format=freeze"], capture_output=True, text=True).stdout.lower()
    assert "numpy" not in listed and "torch" not in listed and "safetensors" not in listed, listed
    return venv / "bin" / "compat"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    sys.path.insert(0, str(ROOT / "tests" / "doctor"))
    from doctor_models import kimi_k25_target, specforge_drafter

    base = tmp_path_factory.mktemp("inputs")
    return {"target": kimi_k25_target(base / "Kimi-K2.5"),
            "drafter": specforge_drafter(base / "kimi-k25-eagle3", layer_ids=[2, 30, 58])}


def run(compat: Path, *args, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    return subprocess.run([str(compat), *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


@pytest.mark.parametrize("argv, codes", [
    (["probe", "--engine", "vllm==0.16.0", "--json"], (0,)),
    (["probe", "--engine", "sglang==0.5.14"], (0,)),
    (["patch", "--engine", "vllm==0.16.0", "--dry-run"], (0,)),
    (["doctor", "{target}", "{drafter}", "--engine", "vllm==0.16.0"], (1,)),
    (["doctor", "{target}", "{drafter}", "--engine", "sglang==0.5.14", "--json"], (0, 1)),
    (["convert", "ckpt", "{drafter}", "{tmp}/converted", "--to", "vllm", "--engine-version", "0.16.0", "--target", "{target}"], (0,)),
    (["convert", "ckpt", "{drafter}", "{tmp}/cast", "--to", "vllm", "--engine-version", "0.16.0", "--target", "{target}",
      "--dtype", "bfloat16"], (2,)),  # casting needs numpy: said, with the extra that brings it
    (["--help"], (0,)),
    (["matrix", "--engine", "vllm", "--releases", "==0.16.0", "--target", "{target}", "--drafter", "{drafter}",
      "--family", "kimi-k2", "--kind", "specforge", "--out", "{tmp}/site"], (0,)),
    (["probe", "--host", "127.0.0.1:1", "--json"], (3,)),  # fleet mode: asyncssh and the bundle of a plain install
], ids=["probe-json", "probe-sglang", "patch-dry-run", "doctor", "doctor-sglang-json", "convert", "convert-dtype", "help",
        "matrix", "fleet"])
def test_every_main_job_runs_without_the_extras(plain, inputs, tmp_path, argv, codes):
    argv = [a.format(target=inputs["target"], drafter=inputs["drafter"], tmp=tmp_path) for a in argv]
    proc = run(plain, *argv)
    assert "Traceback" not in proc.stderr and "ModuleNotFoundError" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode in codes, (proc.returncode, proc.stderr[-2000:])
    if "--dtype" in argv:
        assert "compat[dtype]" in proc.stderr


def test_verify_server_runs_without_the_extras_and_ships_its_prompts(plain):
    """`compat verify --server` from the plain install: its built-in prompts come from the installed package data,
    against a modelled vLLM 0.16.0 server (tests/verify/modelled_engine.py: the names its probes read from that
    release's source, the behaviour modelled)."""
    sys.path.insert(0, str(ROOT / "tests" / "verify"))
    from modelled_engine import Behaviour, ModelledEngine

    from compat.report import build_report
    from compat.sources import open_tree

    report = build_report(open_tree("vllm==0.16.0", progress=False))
    with ModelledEngine(report, Behaviour()).serve() as server:
        proc = run(plain, "verify", "--server", server.url, "--num-prompts", "3", "--max-tokens", "8", "--json")
    assert "Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    assert doc["prompts"]["source"] == "built-in" and doc["prompts"]["count"] == 3
    assert doc["server"]["version"] == "0.16.0" and doc["verdict"] == "healthy"
