"""Every option of the vLLM server's command line (`vllm serve` / `python -m vllm.entrypoints.openai.api_server`):
names, aliases, the value each takes (int, float, str, choices, JSON, a bool flag with its `--no-` form), and
how the parser reads what is typed (`FlexibleArgumentParser` turns `--a_b` into `--a-b`; argparse takes a
unique prefix of a long option unless `allow_abbrev=False`). A launch line is checked against this list:
an option it lacks is what the engine refuses with "unrecognized arguments". See _arguments.py for where
each argument is read from.
"""

from __future__ import annotations

import re

from compat.probes import probe
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
        }
    return {"class": "argparse.ArgumentParser", "location": None, "underscores_to_dashes": False, "allow_abbrev": True}
