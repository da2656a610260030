"""Every option of `python -m sglang.launch_server` (prepare_server_args builds a plain argparse parser and
ServerArgs.add_cli_args fills it: explicit add_argument calls, `A[T, Arg(...)]` fields, or msgspec namespace
fields, by release; see _server_args.py): names, aliases, the value each takes, choices. A launch line is
checked against this list: an option it lacks is what argparse refuses with "unrecognized arguments".
Plain argparse: `--a_b` is not `--a-b`, and a unique prefix of a long option is taken (allow_abbrev).
"""

from __future__ import annotations

from compat.probes import probe
from compat.probes.sglang._server_args import every_flag
from compat.core.tree import EngineTree

SCALARS = {"int": "int", "float": "float", "str": "str", "Optional[int]": "int", "Optional[str]": "str",
           "Optional[float]": "float", "int | None": "int", "str | None": "str", "float | None": "float"}


@probe("sglang", "cli_arguments", "Server command-line arguments (every option)", order=85)
def cli_arguments(tree: EngineTree) -> dict:
    source = every_flag(tree)
    if source is None:
        return {"present": False, "reason": "no ServerArgs in sglang/srt"}
    arguments = []
    for flag in source.flags:
        if flag.action in ("store_true", "store_false") or flag.type == "bool" and not flag.action:
            value = "flag"
        elif flag.nargs:
            value = "list"
        else:
            value = SCALARS.get(flag.type or "str", flag.type or "str")
        entry: dict[str, object] = {"name": flag.name, "aliases": list(flag.aliases), "value": value, "location": tree.loc(flag.relpath, flag.node)}
        if flag.dest != flag.name.lstrip("-").replace("-", "_"):
            entry["dest"] = flag.dest
        if flag.default is None or isinstance(flag.default, (bool, int, float, str)):
            entry["default"] = flag.default  # what the setting is when the line does not give it
        if isinstance(flag.choices, list):
            entry["choices"] = flag.choices
        if flag.nargs:
            entry["nargs"] = str(flag.nargs)
        if flag.action and flag.action not in ("store_true", "store_false"):
            entry["action"] = flag.action
            if "BooleanOptionalAction" in flag.action:
                entry["value"], entry["negatable"] = "bool", True
        arguments.append(entry)
    return {"present": True, "location": tree.loc(source.relpath, source.line), "arguments": arguments,
            "parser": {"class": "argparse.ArgumentParser", "location": None, "underscores_to_dashes": False,
                       "allow_abbrev": True}}
