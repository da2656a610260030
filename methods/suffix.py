"""Suffix decoding: drafts from a suffix tree of the prompt and of earlier outputs. No drafter.

Up to 0.33.0 vLLM runs it on Snowflake's Arctic Inference, which is not a vLLM dependency: the release checks for
the module (`has_arctic_inference()`) and refuses at start-up with "Install via `pip install
arctic-inference==0.1.1`". 0.34.0's GPU suffix speculator needs nothing. Each release's check is probed.
"""

from __future__ import annotations

from typing import Any, Mapping

from compat.methods import Recognition, VenvPackage

FAMILY = "suffix"
TITLE = "suffix decoding"
DESCRIPTION = "a suffix tree of prompts and outputs: no drafter"
ORDER = 95
TAKES_DRAFTER = False
VENV = (VenvPackage("arctic_inference", "arctic-inference"),)


def recognise(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | None:
    return None  # nothing to recognise: no drafter
