"""The draft_dtype probes: where each engine gives the draft the server's dtype, on real releases."""

from __future__ import annotations

import os

import pytest


@pytest.mark.parametrize("engine, version, where", [
    ("vllm", "0.11.0", "vllm/config/speculative.py:299"), ("vllm", "0.32.0", "vllm/config/speculative.py:1301"),
    ("sglang", "0.5.8", "sglang/srt/configs/model_config.py:252"),
    ("sglang", "0.5.23", "sglang/srt/configs/model_config.py:965"),
])
def test_real_releases(engine, version, where):
    import importlib

    from compat.sources.released import fetch_release

    probe = importlib.import_module(f"compat.probes.{engine}.draft_dtype").draft_dtype
    tree = fetch_release(engine, f"=={version}", progress=False, offline=os.environ.get("COMPAT_OFFLINE") == "1")
    assert probe(tree) == {"present": True, "from_target": True, "location": where}
