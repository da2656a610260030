"""The draft_dtype probes: where each engine gives the draft the server's dtype, on real releases."""

from __future__ import annotations


import pytest


@pytest.mark.parametrize("engine, version, where", [
    ("vllm", "0.11.0", "vllm/config/speculative.py:299"), ("vllm", "0.32.0", "vllm/config/speculative.py:1301"),
    ("sglang", "0.5.8", "sglang/srt/configs/model_config.py:252"),
    ("sglang", "0.5.23", "sglang/srt/configs/model_config.py:965"),
])
def test_real_releases(engine, version, where, pinned_release):
    import importlib

    probe = importlib.import_module(f"compat.probes.{engine}.draft_dtype").draft_dtype
    tree = pinned_release(engine, version)
    assert probe(tree) == {"present": True, "from_target": True, "location": where}
