"""Each patch's own options: declared by the patch (its `add_args`), shown on the command line of every
command that applies patches (`compat patch`, `compat plugin install`), read back by dest name, and
spelled back into a command line (the fixes doctor prints).

    add_patch_options(parser)        every patch's options, in a group named after the patch
    given_options(args) -> dict      the values given on the command line, by dest (what `plan` takes)
    resolve_options(patch, given)    the patch's OPTIONS with what was given
    option_flags(patch, options)     {"model_types": ("kimi_k25",)} -> ["--model-type", "kimi_k25"]
"""

from __future__ import annotations

import argparse
from typing import Any

from compat import engines
from compat.patches import Patch, all_patches


def option_actions(patch: Patch) -> list[argparse.Action]:
    """The argparse actions of the options `patch` declares (its `add_args`), [] when none."""
    return patch.option_actions()


def option_flags(patch: Patch, options: dict[str, Any]) -> list[str]:
    """The command-line spelling of option values for `patch`: {"model_types": ("kimi_k25",)}
    -> ["--model-type", "kimi_k25"] (a repeatable option once per value; a switch alone)."""
    flags: list[str] = []
    for dest, option_strings, nargs, const in patch.option_spellings():
        if dest not in options:
            continue
        value = options[dest]
        flag = max(option_strings, key=len)  # the long spelling
        if nargs == 0:  # a switch (store_true / store_const)
            flags += [flag] if value == const else []
        elif isinstance(value, (list, tuple)):
            for item in value:
                flags += [flag, str(item)]
        elif value is not None:
            flags += [flag, str(value)]
    return flags


def resolve_options(patch: Patch, given: dict[str, Any] | None) -> dict[str, Any]:
    """The patch's OPTIONS with what was given by dest: a list or tuple default is extended, any other replaced."""
    options = dict(patch.options)
    for key, value in (given or {}).items():
        if key not in options or value is None or (isinstance(value, (list, tuple)) and not value):
            continue
        if isinstance(options[key], (list, tuple)):
            options[key] = tuple(dict.fromkeys([*options[key], *value]))
        else:
            options[key] = value
    return options


# -- on a command line -----------------------------------------------------------------------------
class _OncePerOption:
    """The argument group of one patch, made on its first option. A second patch declaring an option
    already declared (an SGLang and a vLLM whitelist both taking --model-type) shares the first one:
    parsed once, it reaches both by dest, and its help says so."""

    def __init__(self, parser: argparse.ArgumentParser, patch: Patch, declared: dict[str, argparse.Action]):
        self.parser = parser
        self.patch = patch
        self.declared = declared  # option string -> its action, across patches
        self.group: argparse._ArgumentGroup | None = None

    def add_argument(self, *flags: str, **kwargs: Any) -> argparse.Action:
        known = next((self.declared[f] for f in flags if f in self.declared), None)
        if known is not None:
            known.help = f"{known.help} (also read by {self.patch.id})"
            return known
        if self.group is None:
            self.group = self.parser.add_argument_group(f"patch {self.patch.id}", self.patch.description)
        action = self.group.add_argument(*flags, **kwargs)
        self.declared.update(dict.fromkeys(flags, action))
        return action


def every_patch() -> list[Patch]:
    """Every patch of every engine (the options a command line offers)."""
    return [p for engine in engines.names() for p in all_patches(engine)]


def add_patch_options(parser: argparse.ArgumentParser) -> None:
    """Each patch's own options, in a group named after it (`compat patch --help` lists them)."""
    declared: dict[str, argparse.Action] = {}
    for patch in every_patch():
        if patch.takes_options:
            patch.add_args(_OncePerOption(parser, patch, declared))


def given_options(args: argparse.Namespace) -> dict[str, Any]:
    """The option values given on the command line, by dest (what `plan(options=...)` takes; each patch
    validates its own)."""
    options = {}
    for patch in every_patch():
        for action in option_actions(patch):
            value = getattr(args, action.dest, None)
            if value is not None and value != action.default and value not in ([], ()):
                options[action.dest] = value
    return options
