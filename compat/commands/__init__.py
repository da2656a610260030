"""The subcommands: one per file, found by name (pip's `commands/__init__.py`, made self-registering).

A command module defines, in plain sight:

    NAME          "probe"  (what the user types after `compat`)
    SUMMARY       one line for `compat --help`
    DESCRIPTION   the paragraph `compat NAME --help` starts with
    EPILOG        examples and the exit codes (optional)
    add_arguments(parser)        its options (shared groups come from `_source.py`, `_output.py`)
    run(args, console) -> int    the work; raise a CompatError for anything the user must fix

`compat --help` imports every command module, so heavy imports (rich, libcst, torch, the rule
registries) belong inside `run`: a fast command never pays for the imports of a slow one. Modules whose name starts with `_`
hold what several commands share. Adding a command is adding a file.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

_REQUIRED = ("NAME", "SUMMARY", "DESCRIPTION", "add_arguments", "run")


def command_names() -> list[str]:
    """Every command, in the order `compat --help` lists them (ORDER, then name)."""
    return [module.NAME for module in _modules()]


def get_command(name: str) -> ModuleType | None:
    return next((m for m in _modules() if m.NAME == name), None)


_LOADED: list[ModuleType] = []


def _modules() -> list[ModuleType]:
    if not _LOADED:
        for info in pkgutil.iter_modules(__path__):
            if info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{__name__}.{info.name}")
            missing = [attr for attr in _REQUIRED if not hasattr(module, attr)]
            if missing:
                raise RuntimeError(f"command module {module.__name__} lacks {', '.join(missing)}")
            if any(m.NAME == module.NAME for m in _LOADED):
                raise RuntimeError(f"two command modules claim {module.NAME!r}")
            _LOADED.append(module)
        _LOADED.sort(key=lambda m: (getattr(m, "ORDER", 50), m.NAME))
    return _LOADED
