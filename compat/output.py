"""What every command prints the same way: the exit codes in --help, and JSON documents (with their schema)."""

from __future__ import annotations

import json

SCHEMA_VERSION = 1  # bumped when a key of a JSON document changes meaning or goes away

EXIT_CODES = """exit codes:
  0  done (report produced, patch applied, checkpoint written)
  1  a check failed
  2  usage error
  3  the engine source could not be obtained (no such release, offline with an empty cache, not a tree)
  4  refused: an input or file is not what was expected, or the output exists (nothing was changed)
"""


def add_json_argument(parser, help_text: str = "print the result as JSON (stable keys, for CI)") -> None:
    parser.add_argument("--json", action="store_true", help=help_text)


def print_json(document: dict, kind: str) -> None:
    """One JSON document on stdout, with `schema` naming its kind and version first."""
    print(json.dumps({"schema": f"compat.{kind}/{SCHEMA_VERSION}", **document}, indent=2))


def error_document(message: str, fix: str | None, exit_code: int) -> dict:
    """The one shape of an error under --json, whatever the command."""
    return {"error": message, "fix": fix, "exit_code": exit_code}
