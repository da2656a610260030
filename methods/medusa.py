"""Medusa and the MLP speculator: extra heads on the target's last hidden state (vLLM up to 0.32.0; not in the V1
runner's chain for mlp_speculator). Listed so that every name a release accepts has a family."""

from __future__ import annotations

from typing import Any, Mapping

from compat.methods import Recognition, architectures

FAMILY = "medusa"
TITLE = "Medusa / MLP speculator"
DESCRIPTION = "extra decoding heads on the target's last hidden state"
ORDER = 80
ARCHITECTURES = r"^Medusa|MLPSpeculator"  # the registered drafter classes of the family
TAKES_DRAFTER = True
KEYS_READ = ("architectures (Medusa*, MLPSpeculator*)",)


def recognise(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | None:
    archs = [a for a in architectures(config) if a.startswith(("Medusa", "MLPSpeculator"))]
    return Recognition(FAMILY, "unknown", f"architectures {archs}") if archs else None
