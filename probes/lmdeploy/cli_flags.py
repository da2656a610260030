"""LMDeploy's speculative CLI flags: every `--speculative-*` option its CLI adds (0.11.0+), with the sub-commands
that take them.

The options are added by one `ArgumentHelper` method (`add_spec_group`, lmdeploy/cli/utils.py), called by the parsers
of `lmdeploy serve api_server` and `lmdeploy chat`; argparse gives each its type, default and choices
(`--speculative-algorithm` lists the methods; `--speculative-dflash-block-size` arrives in 0.18.0).
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.lmdeploy._source import flag_adders, speculative_flags, subcommand_of


@probe("lmdeploy", "cli_flags", "Speculative CLI flags", order=30)
def cli_flags(tree: EngineTree) -> list[dict]:
    flags = speculative_flags(tree)
    commands: dict[str, list[dict]] = {}
    for function in dict.fromkeys(f.function for f in flags):
        commands[function] = [{"command": subcommand_of(tree, relpath, caller) or caller, "location": tree.loc(relpath, call)}
                              for relpath, call, caller in flag_adders(tree, function)]
    out = []
    for flag in flags:
        entry = {"name": flag.name, "type": flag.value("type"), "default": flag.value("default"),
                 "choices": flag.value("choices"), "location": tree.loc(flag.relpath, flag.call),
                 "added_by": flag.function, "commands": commands.get(flag.function, [])}
        if flag.value("action"):
            entry["action"] = flag.value("action")
        if flag.value("dest"):
            entry["dest"] = flag.value("dest")
        out.append(entry)
    return out
