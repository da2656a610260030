"""The two consoles a command writes to: results on stdout, errors and progress on stderr.

Both are made on first use: rich costs tens of milliseconds to import, and `compat probe --json`
(or any command that prints only JSON and no error) never needs it.
"""

from __future__ import annotations

import sys


class LazyConsole:
    """A rich Console built, with these options, the first time anything of it is used."""

    def __init__(self, **options):
        self._options = options
        self._console = None

    def __getattr__(self, name):
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return getattr(self._console, name)


def make_consoles(args):
    width = None if sys.stdout.isatty() else 120
    console = LazyConsole(stderr=False, highlight=False, soft_wrap=False, width=width)
    err_console = LazyConsole(stderr=True, highlight=False, soft_wrap=True)
    return console, err_console
