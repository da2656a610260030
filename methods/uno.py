"""UNO (SGLang 0.5.20 on): the target drafts for itself through a LoRA (`--uno-lora-path`); no draft model.

SGLang's `_handle_uno` (arg_groups/speculative_hook.py in 0.5.23) refuses `--speculative-draft-model-path`,
requires `--uno-lora-path` and `--speculative-num-draft-tokens`, runs on CUDA only; requests with grammars,
logprobs, penalties, logit_bias or LoRA are refused (speculative/uno_validation.py).
"""

from __future__ import annotations

from typing import Any, Mapping

from compat.methods import Recognition

FAMILY = "uno"
TITLE = "UNO"
DESCRIPTION = "the target drafts for itself through a LoRA (SGLang)"
ORDER = 95
TAKES_DRAFTER = False
TARGET_NEEDS = "a UNO LoRA for the target (--uno-lora-path)"


def recognise(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | None:
    return None  # the LoRA is not a drafter checkpoint
