"""Which patch an engine failure names: the patch declares the engine's message (FIXES_ERRORS), and the target
classes it serves (TARGET_CLASSES); nothing is read from its prose."""

from __future__ import annotations

import pytest

from compat.patches import all_patches
from compat.verify.patch_hint import patch_command, patches_for_error

BLOCK_ERROR = ("ValueError: No common block size for 16 (CPU_MLA: [16]; CPU_ATTN: [MultipleOf(32)]). "
               "Please choose a different block_size.")


def test_the_cpu_block_patch_declares_the_engine_message():
    patch = next(p for p in all_patches("vllm") if p.id == "vllm-cpu-attn-block16")
    assert patch.fixes_errors and patch.fixes(BLOCK_ERROR)
    assert not patch.fixes("RuntimeError: something else entirely")


def test_a_patch_for_some_targets_fixes_an_error_only_when_it_names_one():
    """The interface error does not say which target failed: a patch for one target class is the fix only when the
    text names its class (SGLang's AttributeError does; vLLM's message does not)."""
    by_id = {p.id: p for p in all_patches("sglang")}
    named = "AttributeError: 'DeepseekV3ForCausalLM' object has no attribute 'set_eagle3_layers_to_capture'"
    assert by_id["sglang-deepseek-eagle3-capture"].fixes(named)
    assert not by_id["sglang-kimi-k25-eagle3"].fixes(named)
    vllm = {p.id: p for p in all_patches("vllm")}
    assert not vllm["vllm-deepseek-eagle3-aux"].fixes("RuntimeError: Model does not support EAGLE3 interface")
    assert vllm["vllm-deepseek-eagle3-aux"].serves("DeepseekV3ForCausalLM")
    assert vllm["vllm-eagle3-whitelist"].fixes("ValueError: Eagle3 is only supported for ['llama'] models. Got x")


def test_patch_command_is_doctors():
    assert patch_command("vllm", "/opt/venv/bin/python", ["a", "b"]) == \
        "compat patch --engine vllm --python /opt/venv/bin/python --select a --select b"


@pytest.mark.network
def test_a_real_release_is_offered_the_block_patch_for_that_error(pinned_release):
    tree = pinned_release("vllm", "0.32.0")
    found = patches_for_error(tree, BLOCK_ERROR, "/venv/bin/python")
    assert [p["id"] for p in found] == ["vllm-cpu-attn-block16"]
    assert found[0]["command"] == "compat patch --engine vllm --python /venv/bin/python --select vllm-cpu-attn-block16"
    assert patches_for_error(tree, "RuntimeError: something else entirely", None) == []
    older = pinned_release("vllm", "0.28.0")  # before the clash: the patch is not offered
    assert patches_for_error(older, BLOCK_ERROR, None) == []
