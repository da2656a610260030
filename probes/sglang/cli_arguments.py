"""Every option of `python -m sglang.launch_server` (prepare_server_args builds a plain argparse parser and
ServerArgs.add_cli_args fills it: explicit add_argument calls, `A[T, Arg(...)]` fields, or msgspec namespace
fields, by release; see _server_args.py): names, aliases, the value each takes, choices. A launch line is
checked against this list: an option it lacks is what argparse refuses with "unrecognized arguments".
Plain argparse: `--a_b` is not `--a-b`, and a unique prefix of a long option is taken (allow_abbrev).
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes._ast import base_names, find_class, literal, unparse
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
        elif isinstance(flag.choices, str):  # computed at run time (a registry's keys): kept as code, never judged
            entry["choices_from"] = flag.choices
        if flag.nargs:
            entry["nargs"] = str(flag.nargs)
        if flag.action and flag.action not in ("store_true", "store_false"):
            entry["action"] = flag.action
            if "BooleanOptionalAction" in flag.action:
                entry["value"], entry["negatable"] = "bool", True
            elif flag.action not in ("store", "append", "store_const", "count"):
                entry["value"] = _custom_action(tree, flag.action, flag.node, str(entry["value"]))
                refusal = _refusal(tree, flag.action, flag.node)
                if refusal:
                    entry["refused"] = refusal
        arguments.append(entry)
    return {"present": True, "location": tree.loc(source.relpath, source.line), "arguments": arguments,
            "parser": {"class": "argparse.ArgumentParser", "location": None, "underscores_to_dashes": False,
                       "allow_abbrev": True}}


def _custom_action(tree: EngineTree, action: str, node: object, value: str) -> str:
    """A release's own argparse.Action: "flag" when it takes no value (nargs=0 given, or its __init__'s default, or
    a store-true base); a value (choices judged) when the call gives nargs=None; else "unknown" (the action parses
    the value itself: doctor does not judge it)."""
    given = {k.arg: unparse(k.value) for k in node.keywords if k.arg} if isinstance(node, ast.Call) else {}
    if "nargs" in given:
        return "flag" if given["nargs"] == "0" else value if given["nargs"] == "None" else "unknown"
    found = find_class(tree, action.rsplit(".", 1)[-1], under="sglang")
    if found is None:
        return "unknown"
    _, cls = found
    if any(b.endswith(("StoreTrueAction", "StoreFalseAction", "StoreConstAction")) for b in base_names(cls)):
        return "flag"
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    defaults = dict(zip([a.arg for a in init.args.args][-len(init.args.defaults):], init.args.defaults)) if init and init.args.defaults else {}
    return "flag" if "nargs" in defaults and unparse(defaults["nargs"]) == "0" else "unknown"


def _refusal(tree: EngineTree, action: str, node: object) -> dict | None:
    """A deprecated option whose Action refuses it when typed: `raise ValueError(self.help)` (0.5.3) or
    `parser.error(self.error_message)` when the call gives one (0.5.18): the message the user sees, and where."""
    found = find_class(tree, action.rsplit(".", 1)[-1], under="sglang")
    given = {k.arg: literal(k.value) for k in node.keywords if k.arg} if isinstance(node, ast.Call) else {}
    call = next((n for n in found[1].body if isinstance(n, ast.FunctionDef) and n.name == "__call__"), None) if found else None
    if found is None or call is None:
        return None
    for stmt in ast.walk(call):
        raised = stmt.exc if isinstance(stmt, ast.Raise) else stmt if isinstance(stmt, ast.Call) and unparse(stmt.func) == "parser.error" else None
        if not (isinstance(raised, ast.Call) and raised.args and isinstance(raised.args[0], ast.Attribute)):
            continue
        message = given.get(raised.args[0].attr)
        if isinstance(message, str):
            kind = "" if isinstance(stmt, ast.Call) else f"{unparse(raised.func)}: "
            return {"message": kind + message, "location": tree.loc(found[0], stmt)}
    return None
