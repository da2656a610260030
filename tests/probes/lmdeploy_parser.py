"""LMDeploy's own `lmdeploy serve api_server` parser, built from a release's source and run on launch lines (a script).

    python lmdeploy_parser.py ROOT < {"lines": [[word, ...], ...]}

prints {"built": true, "outcomes": [{"ok", "error", "target", "spec"}, ...], "stubbed": [...]} (or {"built": false,
"error": ...}). The parser is the release's: `CLI.parser` (FlexibleArgumentParser, lmdeploy/cli/cli.py) with
`SubCliServe.add_parser_api_server()` (lmdeploy/cli/serve.py), parsed as `lmdeploy serve api_server WORDS`. Nothing
is installed: the release's tree goes first on sys.path and the packages this interpreter lacks are stubbed by
tests/matrix/release_parser.py's StubFinder (the argument definitions and argparse run for real).
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "matrix"))
import release_parser  # noqa: E402  (tests/matrix: the stubs and argparse's error as an exception)


def outcome(parser, words: list[str]) -> dict:
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            args = parser.parse_args(["serve", "api_server", *words])
    except release_parser.ParseError as exc:
        return {"ok": False, "error": str(exc)}
    except SystemExit:
        return {"ok": False, "error": "exit"}
    spec = {k: v for k, v in vars(args).items() if k.startswith("speculative_") and v is not None}
    return {"ok": True, "error": None, "target": args.model_path, "spec": spec}


def main() -> None:
    root = sys.argv[1]
    request = json.load(sys.stdin)
    sys.path.insert(0, root)
    finder = release_parser.StubFinder(root, tempfile.mkdtemp(prefix="lmdeploy-parser-"))
    sys.meta_path.insert(0, finder)
    argparse.ArgumentParser.error = release_parser._raise  # the message, not an exit
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            cli = importlib.import_module("lmdeploy.cli.cli")
            importlib.import_module("lmdeploy.cli.serve").SubCliServe.add_parser_api_server()
    except BaseException as exc:  # noqa: BLE001 - not buildable here: said, the test decides
        print(json.dumps({"built": False, "error": f"{type(exc).__name__}: {exc}"}))
        return
    outcomes = [outcome(cli.CLI.parser, words) for words in request["lines"]]
    print(json.dumps({"built": True, "outcomes": outcomes, "stubbed": sorted(finder.stubbed)}, default=repr))


if __name__ == "__main__":
    main()
