"""Every argument of `lmdeploy serve api_server` (lmdeploy/cli/serve.py `add_parser_api_server`), in the order its
parser adds them: the positional `model_path` (the model to serve), its own `parser.add_argument(...)` calls, and the
options each `ArgumentHelper.<name>(parser_or_group)` call adds (lmdeploy/cli/utils.py, its parameters bound as the
call binds them: `ArgumentHelper.dtype(pt_group)` adds `--dtype` with the method's `default='auto'`), the speculative
group (`add_spec_group`, 0.11.0+) included. Names, aliases, the value each takes, defaults, choices, with file:line.

The parser: the sub-parsers of `FlexibleArgumentParser(prog='lmdeploy')` (lmdeploy/cli/cli.py; add_subparsers makes
them of the parent's class, but only the top parser's parse_args runs), which turns underscores into dashes in an
option's name before argparse reads it (`--speculative_algorithm`), merges `--key.sub value` into JSON, and keeps
argparse's unique-prefix abbreviations (`--spec` is ambiguous in every release with the speculative group). A launch
line is read against this list (checks/_launch_args.py): the first word argparse takes as a positional is the model.
"""

from __future__ import annotations

import ast
from typing import Any

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes._ast import methods, safe_parse
from compat.probes.lmdeploy._source import CLI, call_name, string

SUBCOMMAND = "api_server"
SCALARS = {"int": "int", "float": "float", "str": "str", "json.loads": "json"}


@probe("lmdeploy", "cli_arguments", "lmdeploy serve api_server arguments (every option)", order=85)
def cli_arguments(tree: EngineTree) -> dict:
    found = _api_server(tree)
    if found is None:
        return {"present": False, "reason": f"no add_parser('{SUBCOMMAND}', ...) in {CLI}"}
    relpath, func, subparser = found
    helpers = _helper_methods(tree)
    arguments: list[dict[str, Any]] = []
    for call in _calls_in_order(func):
        if call_name(call) == "add_argument":
            arguments.append(_argument(tree, relpath, call, {}))
        elif isinstance(call.func, ast.Attribute) and call.func.attr in helpers and isinstance(call.func.value, ast.Name):
            arguments += _helper_arguments(tree, helpers, call, depth=0)
    parser = _parser(tree)
    return {"present": True, "location": tree.loc(relpath, subparser), "command": ["lmdeploy", "serve", SUBCOMMAND],
            "arguments": _first_of_each(arguments), "parser": parser}


def _api_server(tree: EngineTree) -> tuple[str, ast.FunctionDef, ast.Call] | None:
    """The function that builds the sub-command's parser: it calls `add_parser('api_server', ...)`."""
    for relpath in tree.grep(SUBCOMMAND.encode(), under=CLI):
        module = safe_parse(tree, relpath)
        for func in (n for n in ast.walk(module) if isinstance(n, ast.FunctionDef)) if module else ():
            for call in (n for n in ast.walk(func) if isinstance(n, ast.Call) and call_name(n) == "add_parser"):
                if call.args and string(call.args[0]) == SUBCOMMAND:
                    return relpath, func, call
    return None


def _calls_in_order(func: ast.AST) -> list[ast.Call]:
    return sorted((n for n in ast.walk(func) if isinstance(n, ast.Call)), key=lambda c: (c.lineno, c.col_offset))


def _helper_methods(tree: EngineTree) -> dict[str, tuple[str, ast.FunctionDef]]:
    """name -> (file, method) of the classes under lmdeploy/cli whose static methods add arguments (ArgumentHelper)."""
    out: dict[str, tuple[str, ast.FunctionDef]] = {}
    for relpath in tree.grep(b"add_argument", under=CLI):
        module = safe_parse(tree, relpath)
        for cls in (n for n in module.body if isinstance(n, ast.ClassDef)) if module else ():
            for name, method in methods(cls).items():
                if isinstance(method, ast.FunctionDef) and any(isinstance(n, ast.Call) and call_name(n) == "add_argument"
                                                               for n in ast.walk(method)):
                    out.setdefault(name, (relpath, method))
    return out


def _helper_arguments(tree: EngineTree, helpers: dict, call: ast.Call, depth: int) -> list[dict[str, Any]]:
    assert isinstance(call.func, ast.Attribute)  # ArgumentHelper.<name>(...): the caller checked
    relpath, method = helpers[call.func.attr]
    bound = _bind(method, call)
    out = []
    for inner in _calls_in_order(method):
        if call_name(inner) == "add_argument":
            out.append(_argument(tree, relpath, inner, bound))
        elif depth < 2 and isinstance(inner.func, ast.Attribute) and inner.func.attr in helpers and inner.func.attr != method.name:
            out += _helper_arguments(tree, helpers, inner, depth + 1)
    return out


def _bind(method: ast.FunctionDef, call: ast.Call) -> dict[str, ast.expr]:
    """The method's parameters as this call binds them (its arguments, else the parameters' defaults)."""
    params = method.args.args
    defaults = dict(zip([p.arg for p in params][len(params) - len(method.args.defaults):], method.args.defaults))
    bound: dict[str, ast.expr] = dict(defaults)
    for param, arg in zip(params, call.args):
        bound[param.arg] = arg
    bound.update({k.arg: k.value for k in call.keywords if k.arg})
    return bound


def _argument(tree: EngineTree, relpath: str, call: ast.Call, bound: dict[str, ast.expr]) -> dict[str, Any]:
    names = [s for s in (string(a) for a in call.args) if s]
    given = {k.arg: bound.get(k.value.id, k.value) if isinstance(k.value, ast.Name) else k.value
             for k in call.keywords if k.arg}
    long = [n for n in names if n.startswith("--")]
    name = long[0] if long else names[0] if names else "?"
    entry: dict[str, Any] = {"name": name, "aliases": [n for n in names if n != name],
                             "value": _value(names, given), "location": tree.loc(relpath, call)}
    if "dest" in given and string(given["dest"]):
        entry["dest"] = string(given["dest"])
    if "default" in given:
        default = _literal(given["default"])
        if default is None or isinstance(default, (bool, int, float, str)):
            entry["default"] = default
    elif entry["value"] == "flag":
        entry["default"] = _literal(given.get("action")) == "store_false"
    if "choices" in given:
        choices = _literal(given["choices"])
        if isinstance(choices, (list, tuple)):
            entry["choices"] = list(choices)
        else:  # computed when the parser is built (`list(logging._nameToLevel.keys())`): kept as code, never judged
            entry["choices_from"] = ast.unparse(given["choices"])
    if "nargs" in given:
        entry["nargs"] = str(_literal(given["nargs"]))
        kind = SCALARS.get(ast.unparse(given["type"])) if "type" in given else "str"
        entry["item"] = kind or "unknown"
    action = _literal(given.get("action"))
    if isinstance(action, str) and action not in ("store_true", "store_false", "store"):
        entry["action"] = action
    return entry


def _value(names: list[str], given: dict[str, ast.expr]) -> str:
    action = _literal(given.get("action"))
    if names and not names[0].startswith("-"):
        return "positional"
    if action in ("store_true", "store_false", "store_const", "count", "version", "help"):
        return "flag"
    if "nargs" in given and _literal(given["nargs"]) in ("+", "*"):
        return "list"
    if "type" not in given:
        return "str"
    return SCALARS.get(ast.unparse(given["type"]), "unknown")  # type=_parse (quant-policy's own): not judged


def _literal(node: ast.AST | None) -> Any:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node)


def _first_of_each(arguments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for arg in arguments:
        if arg["name"] not in seen:  # argparse would refuse a second one; a release never has it
            seen.add(arg["name"])
            out.append(arg)
    return out


def _parser(tree: EngineTree) -> dict[str, Any]:
    """The top parser's class, and whether its parse_args turns underscores into dashes (`.replace('_', '-')`)."""
    for relpath in tree.grep(b"class FlexibleArgumentParser", under=CLI):
        module = safe_parse(tree, relpath)
        cls = next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == "FlexibleArgumentParser"),
                   None) if module else None
        parse = methods(cls).get("parse_args") if cls else None
        if parse is not None:
            dashes = any(isinstance(n, ast.Call) and call_name(n) == "replace" and [string(a) for a in n.args] == ["_", "-"]
                         for n in ast.walk(parse))
            return {"class": "FlexibleArgumentParser", "location": tree.loc(relpath, cls), "underscores_to_dashes": dashes,
                    "allow_abbrev": True, "dotted_json": "." in ast.unparse(parse)}
    return {"class": "argparse.ArgumentParser", "location": None, "underscores_to_dashes": False, "allow_abbrev": True}
