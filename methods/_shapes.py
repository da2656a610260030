"""What the method files read from a drafter's tensor headers (name -> (dtype, shape), or just the names)."""

from __future__ import annotations

from typing import Any, Mapping


def shape(tensors: Mapping[str, Any], name: str) -> tuple[int, ...] | None:
    """The shape of tensor `name` (with or without a `model.` prefix); None when absent or only names are known."""
    for key in (name, f"model.{name}"):
        value = tensors.get(key)
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], tuple):
            return tuple(int(d) for d in value[1])
    return None


def has(tensors: Mapping[str, Any], *fragments: str) -> str | None:
    """The first tensor name holding any of `fragments` (None: none does)."""
    for name in tensors:
        if any(f in name for f in fragments):
            return str(name)
    return None


def fc_inputs(tensors: Mapping[str, Any], hidden: Any) -> int | None:
    """How many hidden states the drafter's fc fuses (fc.weight [H, k*H] -> k): 2 for EAGLE-1, 3 for EAGLE-3."""
    fc = shape(tensors, "fc.weight")
    if fc is None or len(fc) != 2 or not isinstance(hidden, int) or hidden <= 0 or fc[1] % hidden:
        return None
    return fc[1] // hidden
