"""The speculative_tree_rules probe: SGLang's EAGLE start-up rules on steps / topk / draft tokens, as its code
states them, on a tree the test writes and on real releases (0.5.8: ServerArgs; 0.5.23: arg_groups hooks)."""

from __future__ import annotations


import pytest

from compat.probes.sglang.speculative_tree_rules import speculative_tree_rules
from probe_trees import write_tree

SERVER_ARGS = """
from sglang.srt.environ import envs

class ServerArgs:
    def _handle_speculative_decoding(self):
        if self.speculative_algorithm in ("EAGLE", "EAGLE3"):
            if envs.SGLANG_ENABLE_SPEC_V2.get():
                if self.speculative_eagle_topk > 1:
                    raise ValueError("Spec v2 currently only supports topk = 1 for speculative decoding.")
            if self.speculative_num_steps is None:
                assert self.speculative_eagle_topk is None
            if self.speculative_eagle_topk == 1 and self.speculative_num_draft_tokens != self.speculative_num_steps + 1:
                logger.warning("adjusted to steps + 1")
                self.speculative_num_draft_tokens = self.speculative_num_steps + 1
"""
ENVIRON = """
class Envs:
    SGLANG_ENABLE_SPEC_V2 = EnvBool(False)
"""


@pytest.fixture
def release(pinned_release):
    """release(engine, version) -> the real release (a pinned one, fetched once into the user cache)."""
    return pinned_release


def test_rules_with_their_surrounding_conditions(tmp_path):
    tree = write_tree(tmp_path, "sglang", {"sglang/srt/server_args.py": SERVER_ARGS, "sglang/srt/environ.py": ENVIRON},
                      strip_first_newline=True)
    fact = speculative_tree_rules(tree)
    assert fact["function"] == "_handle_speculative_decoding"
    kinds = [(r["kind"], r["location"]) for r in fact["rules"]]
    assert kinds == [("refuse", "sglang/srt/server_args.py:7"), ("refuse", "sglang/srt/server_args.py:10"),
                     ("adjust", "sglang/srt/server_args.py:11")]
    v2 = fact["rules"][0]
    assert v2["when"] == ["self.speculative_algorithm in ('EAGLE', 'EAGLE3')", "envs.SGLANG_ENABLE_SPEC_V2.get()",
                          "self.speculative_eagle_topk > 1"]
    assert v2["message"] == "ValueError: Spec v2 currently only supports topk = 1 for speculative decoding."
    assert fact["rules"][1]["fails_unless_last"] is True
    assert fact["env_defaults"] == {"SGLANG_ENABLE_SPEC_V2": {"default": False, "location": "sglang/srt/environ.py:2"}}


@pytest.mark.parametrize("version, home, spec_v2", [("0.5.8", "sglang/srt/server_args.py", True),
                                                    ("0.5.23", "sglang/srt/arg_groups/speculative_hook.py", False)])
def test_real_releases(release, version, home, spec_v2):
    fact = speculative_tree_rules(release("sglang", version))
    assert fact["location"].startswith(home)
    messages = " ".join(r["message"] or "" for r in fact["rules"])
    assert "trtllm_mha backend only supports topk = 1" in messages
    assert ("Spec v2 currently only supports topk = 1" in messages) is spec_v2
    assert any(r["kind"] == "adjust" and "steps + 1" in (r["message"] or "") for r in fact["rules"])
