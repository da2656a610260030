"""The subcommands: one per file, found by name (pip's `commands/__init__.py`, made self-registering).

A command module defines, in plain sight:

    NAME          "probe"  (what the user types after `compat`; the file is NAME.py)
    SUMMARY       one line for `compat --help`
    DESCRIPTION   the paragraph `compat NAME --help` starts with
    EPILOG        examples and the exit codes (optional)
    add_arguments(parser)        its options (shared groups come from `_source.py`, `_output.py`)
    run(args, console) -> int    the work; raise a CompatError for anything the user must fix

Commands are found by file name, so `compat probe ...` imports `probe.py` alone; only `compat --help`
(and a mistyped command) imports them all, for their summaries. Heavy imports (rich, libcst, torch, the
rule registries) still belong inside `run`. Modules whose name starts with `_` hold what several
commands share. Adding a command is adding a file.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

_REQUIRED = ("NAME", "SUMMARY", "DESCRIPTION", "add_arguments", "run")


def _files() -> list[str]:
    """Module names of the command files (not `_shared.py`), from the folder itself: nothing is imported."""
    return sorted(f[:-3] for f in os.listdir(__path__[0]) if f.endswith(".py") and not f.startswith("_"))


def get_command(name: str) -> ModuleType | None:
    """The module of command `name`, imported alone; None when there is no such command."""
    module_name = name.replace("-", "_")
    if not module_name.isidentifier() or module_name not in _files():
        return None
    return _load(module_name)


def command_names() -> list[str]:
    """Every command, in the order `compat --help` lists them (ORDER, then name); imports every command."""
    modules = [_load(name) for name in _files()]
    return [m.NAME for m in sorted(modules, key=lambda m: (getattr(m, "ORDER", 50), m.NAME))]


def _load(module_name: str) -> ModuleType:
    module = importlib.import_module(f"{__name__}.{module_name}")
    missing = [attr for attr in _REQUIRED if not hasattr(module, attr)]
    if missing:
        raise RuntimeError(f"command module {module.__name__} lacks {', '.join(missing)}")
    if module.NAME.replace("-", "_") != module_name:
        raise RuntimeError(f"command module {module.__name__} claims {module.NAME!r}: a command's file is named after it")
    return module
