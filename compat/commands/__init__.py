"""The subcommands: one per file, found by name (pip's `commands/__init__.py`, made self-registering).

A command module defines, in plain sight, the fields of `CONTRACT` below (checked when it is imported):

    NAME          "probe"  (what the user types after `compat`; the file is NAME.py, `-` spelled `_`)
    SUMMARY       one line for `compat --help`
    DESCRIPTION   the paragraph `compat NAME --help` starts with
    EPILOG        examples and the exit codes (optional; default: the exit-code table)
    ORDER         where `compat --help` lists it (optional; default 50, lower first, then by name)
    FLEET         True: it also runs on remote hosts (--host, --hosts, --ray; compat/fleet/) (optional)
    AFTER_DASHES  the attribute that gets the words after `--`, kept whole (optional; doctor: a launch line)
    add_arguments(parser)        its options (shared groups come from `_source.py`, `_output.py`)
    run(args, console) -> int    the work; raise a CompatError for anything the user must fix

Commands are found by file name, so `compat probe ...` imports `probe.py` alone; only `compat --help`
(and a mistyped command) imports them all, for their summaries. Heavy imports (rich, libcst, torch, the
rule registries) still belong inside `run`. Modules whose name starts with `_` hold what several
commands share. Adding a command is adding a file (and its test, tests/cli/test_cli_NAME.py).
"""

from __future__ import annotations

from types import ModuleType

from compat.core.output import EXIT_CODES
from compat.core.registry import FUNCTION, Contract, ContractError, Field, Folder, Rule

CONTRACT = Contract("command", (
    Field("NAME", str, doc='what the user types after `compat`, e.g. "probe"'),
    Field("SUMMARY", str, doc="one line for `compat --help`"),
    Field("DESCRIPTION", str, doc="the paragraph `compat NAME --help` starts with"),
    Field("EPILOG", str, default=EXIT_CODES, doc="examples and the exit codes"),
    Field("ORDER", int, default=50, doc="where `compat --help` lists it (lower first, then by name)"),
    Field("FLEET", bool, default=False, doc="runs on remote hosts too: --host/--hosts/--ray (compat/fleet/)"),
    Field("AFTER_DASHES", str, default="", doc="the attribute that gets the words after `--`, kept whole"),
    Field("add_arguments", FUNCTION, doc="add_arguments(parser): its options"),
    Field("run", FUNCTION, doc="run(args, console) -> int: the work"),
), key="NAME")


def _named_after_its_file(rule: Rule) -> None:
    if rule["NAME"].replace("-", "_") != rule.name:
        raise ContractError("command", rule.module.__name__, "NAME",
                            f"is {rule['NAME']!r}: a command's file is named after it ({rule.name}.py)")


FOLDER = Folder(__name__, CONTRACT, check=_named_after_its_file)


def get_command(name: str) -> ModuleType | None:
    """The module of command `name`, imported alone; None when there is no such command."""
    module_name = name.replace("-", "_")
    if not module_name.isidentifier() or module_name not in FOLDER.names():
        return None
    return FOLDER.rule(module_name).module


def command_names() -> list[str]:
    """Every command, in the order `compat --help` lists them (ORDER, then name); imports every command."""
    return [rule["NAME"] for rule in sorted(FOLDER.rules(), key=lambda r: (r["ORDER"], r["NAME"]))]
