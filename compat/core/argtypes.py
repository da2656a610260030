"""Argument types shared by the commands' options and the fleet options (argparse `type=` callables)."""

from __future__ import annotations

import argparse


def seconds(value: str) -> float:
    """A duration in seconds, more than 0 (--timeout, --connect-timeout)."""
    try:
        parsed = float(value)
    except ValueError:
        parsed = 0.0
    if not parsed > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected seconds, more than 0: {value!r}")
    return parsed
