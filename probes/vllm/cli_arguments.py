"""Every option of the vLLM server's command line (`vllm serve` / `python -m vllm.entrypoints.openai.api_server`):
names, aliases, the value each takes (int, float, str, choices, JSON, a bool flag with its `--no-` form), and
how the parser reads what is typed (`FlexibleArgumentParser` turns `--a_b` into `--a-b`; argparse takes a
unique prefix of a long option unless `allow_abbrev=False`). A launch line is checked against this list:
an option it lacks is what the engine refuses with "unrecognized arguments". See _arguments.py for where
each argument is read from.
"""

from __future__ import annotations

import ast
import re

from compat.probes import probe
from compat.probes._ast import literal, methods, unparse
from compat.probes.vllm._arguments import cli_file, server_arguments
from compat.core.tree import EngineTree

PARSER_HOMES = ("vllm/utils/argparse_utils.py", "vllm/utils/__init__.py", "vllm/utils.py")


@probe("vllm", "cli_arguments", "Server command-line arguments (every option)", order=85)
def cli_arguments(tree: EngineTree) -> dict:
    where = cli_file(tree)
    arguments = server_arguments(tree)
    if not arguments:
        return {"present": False, "reason": "no make_arg_parser / EngineArgs.add_cli_args found"}
    return {"present": True, "location": where, "arguments": [a.to_json() for a in arguments], "parser": _parser(tree)}


def _parser(tree: EngineTree) -> dict:
    """What FlexibleArgumentParser does to the typed options before argparse sees them."""
    for relpath in PARSER_HOMES:
        if not tree.exists(relpath):
            continue
        text = tree.read_bytes(relpath).decode("utf-8", "replace")
        cls = re.search(r"^class FlexibleArgumentParser\b", text, re.M)
        if cls is None:
            continue
        line = text.count("\n", 0, cls.start()) + 1
        dash = re.search(r'\.replace\("_", "-"\)', text[cls.start():])
        abbrev = re.search(r"allow_abbrev\s*=\s*False", text[cls.start():])
        return {
            "class": "FlexibleArgumentParser", "location": f"{relpath}:{line}",
            "underscores_to_dashes": dash is not None,
            "underscores_location": f"{relpath}:{text.count(chr(10), 0, cls.start() + dash.start()) + 1}" if dash else None,
            "allow_abbrev": abbrev is None,
            "serve_rules": _serve_rules(tree, relpath),
        }
    return {"class": "argparse.ArgumentParser", "location": None, "underscores_to_dashes": False, "allow_abbrev": True}


def _serve_rules(tree: EngineTree, relpath: str) -> list[dict]:
    """What FlexibleArgumentParser.parse_args does to a `vllm serve` line before argparse reads it (in the block
    guarded by `args[0] == "serve"`): "model-option-refused" (0.10-0.11.0 raise ValueError on `--model`),
    "model-option-moved" (from 0.11.1 `--model M` becomes the positional, in front), "positional-model-first"
    (from 0.17 a line that starts with an option and names --served-model-name is refused)."""
    module = tree.parse(relpath)
    cls = next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == "FlexibleArgumentParser"), None)
    parse_args = methods(cls).get("parse_args") if cls is not None else None
    if parse_args is None:
        return []
    rules = []
    for block in ast.walk(parse_args):
        if not (isinstance(block, ast.If) and '"serve"' in unparse(block.test).replace("'", '"')):
            continue
        guards = {id(r): n.test for n in ast.walk(block) if isinstance(n, ast.If) for r in n.body}
        for node in ast.walk(block):
            if isinstance(node, ast.Raise) and node.exc is not None:
                message = _message(node.exc)
                rule = ("model-option-refused" if "--model" in message else
                        "positional-model-first" if "positional" in message else None)
                guard = unparse(guards.get(id(node))) or ""
                if rule:  # when: the option whose presence the guard tests besides the first word (--served-model-name)
                    rules.append({"rule": rule, "message": message, "location": tree.loc(relpath, node),
                                  "when": "--served-model-name" if "served" in guard else None})
            elif (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "model_tag" for t in node.targets)
                  and not any(r["rule"] == "model-option-moved" for r in rules)):
                rules.append({"rule": "model-option-moved", "message": None, "location": tree.loc(relpath, node)})
    return rules


def _message(call: ast.expr) -> str:
    """The literal text of `ValueError("a" "b")`: the constant parts of its first argument, joined."""
    arg = call.args[0] if isinstance(call, ast.Call) and call.args else call
    return "".join(str(literal(n)) for n in ast.walk(arg) if isinstance(n, ast.Constant) and isinstance(n.value, str))
