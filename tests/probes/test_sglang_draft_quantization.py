"""The draft_quantization probe: where SGLang gives the draft the target's --quantization, and `unquant`."""

from __future__ import annotations


import pytest

from compat.probes.sglang.draft_quantization import draft_quantization


@pytest.mark.parametrize("version, inherits, unquant", [
    ("0.5.8", "sglang/srt/server_args.py:851", "sglang/srt/server_args.py:852"),
    ("0.5.23", "sglang/srt/arg_groups/serving_hook.py:689", "sglang/srt/arg_groups/serving_hook.py:704"),
])
def test_real_releases(version, inherits, unquant, pinned_release):
    tree = pinned_release("sglang", version)
    assert draft_quantization(tree) == {"inherits_target": True, "inherits_location": inherits, "unquant_location": unquant}


def test_a_tree_without_it(tmp_path):
    from probe_trees import write_tree

    tree = write_tree(tmp_path, "sglang", {"sglang/srt/server_args.py": "class ServerArgs:\n    quantization = None\n"})
    assert draft_quantization(tree)["inherits_target"] is False
