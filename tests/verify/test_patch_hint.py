"""Which patch an engine failure names: the patch's WHY quotes the engine's message."""

from __future__ import annotations

import pytest

from compat.patches import all_patches
from compat.verify.patch_hint import error_keys, patch_command, patches_for_error

BLOCK_ERROR = ("ValueError: No common block size for 16 (CPU_MLA: [16]; CPU_ATTN: [MultipleOf(32)]). "
               "Please choose a different block_size.")


def test_the_cpu_block_patch_quotes_the_engine_message():
    patch = next(p for p in all_patches("vllm") if p.id == "vllm-cpu-attn-block16")
    keys = error_keys(patch.why)
    assert keys and all(key in BLOCK_ERROR for key in keys)


def test_error_keys_ignore_lines_that_are_not_errors():
    assert error_keys(("code: vllm/x.py", "see vllm#1: something")) == []
    assert error_keys(("error on X: short",)) == []  # too short to match by accident


def test_patch_command_is_doctors():
    assert patch_command("vllm", "/opt/venv/bin/python", ["a", "b"]) == \
        "compat patch --engine vllm --python /opt/venv/bin/python --select a --select b"


@pytest.mark.network
def test_a_real_release_is_offered_the_block_patch_for_that_error():
    from compat.sources.released import fetch_release

    tree = fetch_release("vllm", "==0.32.0", progress=False)
    found = patches_for_error(tree, BLOCK_ERROR, "/venv/bin/python")
    assert [p["id"] for p in found] == ["vllm-cpu-attn-block16"]
    assert found[0]["command"] == "compat patch --engine vllm --python /venv/bin/python --select vllm-cpu-attn-block16"
    assert patches_for_error(tree, "RuntimeError: something else entirely", None) == []
    older = fetch_release("vllm", "==0.28.0", progress=False)  # before the clash: the patch is not offered
    assert patches_for_error(older, BLOCK_ERROR, None) == []
