"""The draft_parallel_rules probe: SpeculativeConfig's rules on the draft TP, as its methods state them."""

from __future__ import annotations


import pytest

from compat.probes.vllm.draft_parallel_rules import draft_parallel_rules
from probe_trees import write_tree

SPEC = """
class SpeculativeConfig:
    draft_tensor_parallel_size: int | None = None

    @staticmethod
    def _verify_and_get_draft_tp(target_parallel_config, speculative_draft_tensor_parallel_size, draft_hf_config):
        if speculative_draft_tensor_parallel_size is None:
            speculative_draft_tensor_parallel_size = target_parallel_config.tensor_parallel_size
        elif speculative_draft_tensor_parallel_size not in (1, target_parallel_config.tensor_parallel_size):
            raise ValueError(f"{speculative_draft_tensor_parallel_size=} cannot be other value than 1 or target")
        return speculative_draft_tensor_parallel_size
"""


def test_the_elif_carries_the_negated_if(tmp_path):
    fact = draft_parallel_rules(write_tree(tmp_path, "vllm", {"vllm/config/speculative.py": SPEC}, strip_first_newline=True))
    refuse = [r for r in fact["rules"] if r["kind"] == "refuse"]
    assert refuse == [{"kind": "refuse", "function": "_verify_and_get_draft_tp", "location": "vllm/config/speculative.py:8",
                       "when": ["not (speculative_draft_tensor_parallel_size is None)",
                                "speculative_draft_tensor_parallel_size not in (1, target_parallel_config.tensor_parallel_size)"],
                       "message": "ValueError: speculative_draft_tensor_parallel_size={speculative_draft_tensor_parallel_size} "
                                  "cannot be other value than 1 or target"}]


@pytest.mark.parametrize("version, misnamed_key", [("0.11.0", False), ("0.16.0", True)])
def test_real_releases(version, misnamed_key, pinned_release):
    tree = pinned_release("vllm", version)
    messages = " ".join(r["message"] or "" for r in draft_parallel_rules(tree)["rules"] if r["kind"] == "refuse")
    assert "cannot be other value than 1 or target model tensor_parallel_size" in messages
    assert ("'tensor_parallel_size' is not a valid argument" in messages) is misnamed_key
