"""N-gram (prompt lookup): drafts by matching the last tokens against the prompt and the output so far. No drafter."""

from __future__ import annotations

from typing import Any, Mapping

from compat.methods import Recognition

FAMILY = "ngram"
TITLE = "n-gram"
DESCRIPTION = "prompt lookup: no drafter, matches the context"
ORDER = 95
TAKES_DRAFTER = False


def recognise(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | None:
    return None  # nothing to recognise: no drafter
