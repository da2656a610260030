"""EAGLE (EAGLE-1/-2): a one-layer drafter fed the target's last hidden state beside the token embedding
(`fc` [H, 2H]). SafeAILab EAGLE checkpoints, vLLM's Eagle*ForCausalLM classes (EAGLEConfig prefixes "Eagle").

An EAGLE-3 drafter run as EAGLE drafts with the wrong head: SGLang runs at accept length 1.00 with no
warning (sglang#21272); vLLM guesses EAGLE from a path with "eagle-" in it when no method is given.
"""

from __future__ import annotations

from typing import Any, Mapping

from compat.methods import Recognition, architectures
from compat.methods._shapes import fc_inputs, has

FAMILY = "eagle"
TITLE = "EAGLE"
DESCRIPTION = "EAGLE-1/-2: one-layer drafter on the target's last hidden state"
ORDER = 70
ARCHITECTURES = r"^Eagle(?!3)"  # the registered drafter classes of the family
TAKES_DRAFTER = True
TARGET_NEEDS = "nothing beyond the last hidden state"
THREADS = ("https://github.com/sgl-project/sglang/issues/21272",)
KEYS_READ = ("architectures", "fc.weight (its input width)")


def recognise(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | None:
    archs = [a for a in architectures(config) if a.startswith("Eagle") and not a.startswith("Eagle3")]
    if archs:
        return Recognition(FAMILY, "safeailab-eagle", f"architectures {archs}")
    if has(tensors, "d2t", "t2d"):
        return None  # vocab maps are EAGLE-3's
    k = fc_inputs(tensors, config.get("hidden_size"))
    if k == 2:
        return Recognition(FAMILY, "safeailab-eagle", "fc.weight fuses 2 hidden states (embedding + last hidden state)")
    return None
