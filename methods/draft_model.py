"""A draft model: a small causal LM of the target's family, run autoregressively, verified by the target.

It must share the target's tokenizer and vocabulary: vLLM builds the draft with the target's tokenizer
(speculator_config.py `tokenizer=target.tokenizer` in 0.34.0), SGLang's STANDALONE likewise, so a draft with
another vocabulary proposes ids that mean other tokens (acceptance near zero, no error) or indexes past its
embedding. The vocab/tokenizer check compares them.
"""

from __future__ import annotations

from typing import Any, Mapping

from compat.methods import Recognition, architectures

FAMILY = "draft_model"
TITLE = "draft model"
DESCRIPTION = "a small causal LM of the target's family, sharing its tokenizer"
ORDER = 90  # the weakest sign: any causal LM
TAKES_DRAFTER = True
TARGET_NEEDS = "the same tokenizer and vocabulary as the draft"
KEYS_READ = ("architectures (*ForCausalLM)", "vocab_size", "lm_head.weight / embed_tokens.weight")


def recognise(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | None:
    """A causal LM: weakly (its architecture and vocabulary say no more), or certainly when its tensors are a whole
    model (its own embedding and a stack of decoder layers) with nothing of a head trained on a target's hidden states
    (no fc.weight, no vocab maps): what else a whole causal LM given as the drafter can be run as is a draft model."""
    archs = [a for a in architectures(config) if a.endswith("ForCausalLM")]
    if not archs or not isinstance(config.get("vocab_size"), int):
        return None
    heads = [n for n in tensors if n.endswith(("lm_head.weight", "embed_tokens.weight"))]
    if tensors and not heads:
        return None
    words = f"a causal LM (architectures {archs}, vocab_size {config['vocab_size']})"
    layers = {n.split(".layers.", 1)[1].split(".", 1)[0] for n in tensors if ".layers." in n and "self_attn" in n}
    embedded = any(n.endswith("embed_tokens.weight") for n in tensors)
    head_signs = [n for n in tensors if n in ("fc.weight", "d2t", "t2d") or n.endswith((".fc.weight", ".d2t", ".t2d"))]
    if embedded and layers and not head_signs:
        return Recognition(FAMILY, "unknown", f"{words[:-1]}, its own embedding and {len(layers)} decoder layers)")
    return Recognition(FAMILY, "unknown", words, certain=False)
