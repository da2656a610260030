"""A draft model: a small causal LM of the target's family, run autoregressively, verified by the target.

It must share the target's tokenizer and vocabulary: vLLM builds the draft with the target's tokenizer
(speculator_config.py `tokenizer=target.tokenizer` in 0.34.0), SGLang's STANDALONE likewise, so a draft with
another vocabulary proposes ids that mean other tokens (acceptance near zero, no error) or indexes past its
embedding. The vocab/tokenizer check compares them.
"""

from __future__ import annotations

from typing import Any, Mapping

from compat.methods import Name, Recognition, architectures

FAMILY = "draft_model"
TITLE = "draft model"
DESCRIPTION = "a small causal LM of the target's family, sharing its tokenizer"
ORDER = 90  # the weakest sign: any causal LM
TAKES_DRAFTER = True
NAMES = {
    "vllm": (Name("draft_model"),),
    "sglang": (Name("STANDALONE", since="0.5.2"),),
}
TARGET_NEEDS = "the same tokenizer and vocabulary as the draft"
KEYS_READ = ("architectures (*ForCausalLM)", "vocab_size", "lm_head.weight / embed_tokens.weight")


def recognise(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | None:
    archs = [a for a in architectures(config) if a.endswith("ForCausalLM")]
    if not archs or not isinstance(config.get("vocab_size"), int):
        return None
    heads = [n for n in tensors if n.endswith(("lm_head.weight", "embed_tokens.weight"))]
    if tensors and not heads:
        return None
    return Recognition(FAMILY, "unknown", f"a causal LM (architectures {archs}, vocab_size {config['vocab_size']})", certain=False)
