"""The manifests tests: a repository of manifests in every format compat reads (tests/manifests/repo/, each file
citing the documentation or chart its shape comes from), and tiny local models for the paths those manifests name."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from manifest_repo import REPO  # noqa: E402,F401
sys.path.insert(0, str(Path(__file__).parents[1] / "doctor"))

MODELS = ("qwen-target", "llama-70b", "ray-target", "sglang-target", "sky-target", "untagged-target", "org/llama-target")
DRAFTERS = ("qwen-drafter", "llama-70b-eagle3", "ray-drafter", "sglang-drafter", "sky-drafter", "llama-drafter",
            "mistral-drafter")


@pytest.fixture(scope="session")
def model_root(tmp_path_factory) -> Path:
    """/models/<name> of the manifests, here: a tiny Llama target and a vLLM-layout EAGLE-3 drafter each."""
    from doctor_models import tiny_llama_target, vllm_drafter

    root = tmp_path_factory.mktemp("models")
    target, drafter = tiny_llama_target(root / "_target"), vllm_drafter(root / "_drafter")
    for name in MODELS:
        shutil.copytree(target, root / name)
    for name in DRAFTERS:
        shutil.copytree(drafter, root / name)
    return root


@pytest.fixture
def doctor(capsys):
    """compat doctor in this process: (exit code, stdout, stderr)."""
    from compat.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(["doctor", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def doctor_json(doctor):
    def run(*argv: str) -> tuple[int, dict]:
        code, out, err = doctor(*argv, "--json")
        assert out.strip(), err
        return code, json.loads(out)

    return run
