"""The two consoles a command writes to: results on stdout, errors and progress on stderr."""

from __future__ import annotations

import sys


def make_consoles(args):
    from rich.console import Console

    width = None if sys.stdout.isatty() else 120
    console = Console(stderr=False, highlight=False, soft_wrap=False, width=width)
    err_console = Console(stderr=True, highlight=False, soft_wrap=True)
    return console, err_console
