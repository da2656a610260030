"""Which releases read a speculators-format drafter natively, over every real release (the probe
`speculators_format`): doctor asks for a conversion only where this says the engine cannot read it.

The independent facts: research notes (vllm-eagle3.md and checkpoint-formats.md 3.1: vLLM reads the
speculators format, its `norm_before_residual` defaulting to true, the ids copied from 0.12 in the
sample, the Qwen3 drafter by layer model_type from 0.25 in the sample; sampled releases, so the first
release lies at or before them) and checkpoint-formats.md 5 pitfall 20 (SGLang: none, every release).
"""

import pytest
from packaging.version import Version

from compat.probes.vllm.speculators_format import translate

pytestmark = [pytest.mark.matrix, pytest.mark.network]

SPECULATORS = {
    "architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
    "transformer_layer_config": {"model_type": "llama", "hidden_size": 64, "vocab_size": 256},
    "draft_vocab_size": 128, "eagle_aux_hidden_state_layer_ids": [2, 4, 5],
    "speculators_config": {"algorithm": "eagle3", "default_proposal_method": "greedy",
                           "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                           "verifier": {"name_or_path": "t", "architectures": ["LlamaForCausalLM"]}},
}


def _located(fact: dict) -> bool:
    path, _, line = fact["location"].rpartition(":")
    return path.endswith(".py") and line.isdigit()


def test_vllm_speculators_reader(vllm_report, vllm_version):
    fact = vllm_report["speculators_format"]
    version = Version(vllm_version)
    if version < Version("0.10.1"):
        assert fact["present"] is False
        assert translate(fact, SPECULATORS).config is None
        return
    assert fact["present"] is True, fact
    assert all(_located(f) for f in (fact["config_class"], fact["routing"], fact["eagle3"], fact["eagle3"]["architecture"]))
    built = translate(fact, SPECULATORS).config
    assert built is not None
    assert built["architectures"] == ["Eagle3LlamaForCausalLM"]
    assert built["hidden_size"] == 64 and built["draft_vocab_size"] == 128
    assert {c["key"]: c["default"] for c in fact["eagle3"]["copies"]}["norm_before_residual"] is True
    if version >= Version("0.12.0"):
        assert built["eagle_aux_hidden_state_layer_ids"] == [2, 4, 5]
    # the drafter class the translation names is one the release registers
    assert built["architectures"][0] in vllm_report["eagle3_drafters"]
    if version >= Version("0.25.0"):
        qwen = dict(SPECULATORS, transformer_layer_config={"model_type": "qwen3", "hidden_size": 64})
        assert translate(fact, qwen).config["architectures"] == ["Eagle3Qwen3ForCausalLM"]


def test_sglang_has_no_speculators_reader(sglang_report, sglang_version):
    fact = sglang_report["speculators_format"]
    assert fact["present"] is False and fact["readers"] == []
    assert fact["loader"] is not None and _located(fact["loader"])
