"""The `compat` command line: probe, patch, convert ckpt, doctor.

Every subcommand takes the same engine-source options (`add_source_arguments`) and the
same exit codes (compat/errors.py), and `--json` where a machine may read the output.
"""

from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console
from rich.text import Text

from compat import __version__
from compat.errors import EXIT_OK, EXIT_USAGE, CompatError, UsageError

EPILOG_CODES = """exit codes:
  0  done (report produced, patch applied, checkpoint written)
  1  a check failed
  2  usage error
  3  the engine source could not be obtained (no such release, offline with an empty cache, not a tree)
  4  refused: an input or file is not what was expected, or the output exists (nothing was changed)
"""

PROBE_EXAMPLES = """examples:
  compat probe                                  which engines are installed here
  compat probe --engine vllm                    the vLLM installed in this interpreter
  compat probe --engine vllm --python /opt/venv/bin/python   ... in the serving venv
  compat probe --engine vllm==0.11.0            a release, fetched from the package index (cached)
  compat probe --engine 'sglang>=0.5.8,<0.6'    the newest release in a range
  compat probe --engine vllm==latest --json     for CI
  compat probe --path ./vllm-checkout           a source tree (checkout, unpacked or patched copy)
"""


def add_source_arguments(parser: argparse.ArgumentParser, *, engine_help: str | None = None) -> None:
    """The options that say where an engine's source comes from (shared by every subcommand)."""
    group = parser.add_argument_group("engine source")
    group.add_argument(
        "--engine", metavar="SPEC",
        help=engine_help or "vllm or sglang: the installed one; vllm==0.11.0, 'sglang>=0.5.8', vllm==latest: a release from the package index",
    )
    group.add_argument("--path", metavar="DIR", help="a source tree: DIR holds vllm/ or sglang/")
    group.add_argument("--python", metavar="PATH", help="look for the installed engine in this interpreter (e.g. the serving venv's python)")
    group.add_argument("--cache-dir", metavar="DIR", help="where fetched releases are kept (default: $XDG_CACHE_HOME/compat or ~/.cache/compat)")
    group.add_argument("--offline", action="store_true", help="never touch the network; use only cached releases")


def _tree_from_args(args, *, progress: bool):
    from compat.sources import open_tree

    return open_tree(
        args.engine, path=args.path, python=args.python, cache_dir=args.cache_dir,
        offline=args.offline, progress=progress,
    )


# -- probe ---------------------------------------------------------------------------------
def cmd_probe(args, console: Console) -> int:
    from compat.report import build_report, render

    if not args.engine and not args.path:
        return _list_installed(args, console)
    tree = _tree_from_args(args, progress=not args.json)
    report = build_report(tree)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        render(report, console)
    return EXIT_OK


def _list_installed(args, console: Console) -> int:
    from compat.sources import find_installed

    engines = find_installed(args.python)
    if args.json:
        print(json.dumps({"installed": [e.__dict__ for e in engines]}, indent=2))
        return EXIT_OK
    where = args.python or sys.executable
    if not engines:
        console.print(f"No vLLM or SGLang is installed in {where}.")
        console.print("Probe a release instead (fetched once from the package index, then cached):")
        console.print("  compat probe --engine vllm==0.11.0\n  compat probe --engine sglang==latest")
        console.print("or the serving venv: compat probe --engine vllm --python /path/to/venv/bin/python")
        return EXIT_OK
    console.print(f"Installed in {where}:")
    for e in engines:
        console.print(f"  {e.engine} {e.version}  (distribution {e.distribution}, {e.root})")
    console.print("\nProbe one: compat probe --engine " + engines[0].engine + (f" --python {args.python}" if args.python else ""))
    return EXIT_OK


# -- convert (implemented in compat/convert.py with its own parser) ------------------------
def cmd_convert(args, console: Console) -> int:
    rest = list(args.rest)
    if not rest or rest[0] in ("-h", "--help"):
        console.print("usage: compat convert ckpt SRC DST --to vllm|sglang|speculators|eagle [options]\n"
                      "       compat convert ckpt --help   for the options")
        return EXIT_OK if rest else EXIT_USAGE
    if rest[0] != "ckpt":
        raise UsageError(f"compat convert {rest[0]}: only 'compat convert ckpt' exists")
    from compat.convert import convert_main

    return convert_main(rest[1:])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="compat",
        description="Make EAGLE-3 drafters work on the vLLM and SGLang releases you run: "
        "probe what a release supports, patch what it lacks, convert drafters to the layout it loads.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG_CODES,
    )
    parser.add_argument("--version", action="version", version=f"compat {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "probe", help="what an engine release supports for EAGLE-3, read from its own source",
        description="Read a vLLM or SGLang release's source (installed, released or a tree) statically and report, "
        "with file and line, how it does EAGLE-3: SpeculativeConfig fields and methods, the target model-type "
        "whitelist, which target classes can feed a drafter, registered drafter architectures, how aux layer ids "
        "are read, and the speculative CLI flags. No GPU, no engine import.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=PROBE_EXAMPLES + "\n" + EPILOG_CODES,
    )
    add_source_arguments(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON (stable keys, for CI)")
    p.set_defaults(func=cmd_probe)

    from compat.doctor import add_doctor_parser
    from compat.patching import add_patch_parser

    add_patch_parser(sub, add_source_arguments, EPILOG_CODES)
    add_doctor_parser(sub, add_source_arguments, EPILOG_CODES)

    c = sub.add_parser(
        "convert", help="rewrite a drafter checkpoint into the layout an engine release loads",
        description="compat convert ckpt SRC DST --to vllm|sglang|speculators|eagle ... "
        "(run 'compat convert ckpt --help' for the options)",
        add_help=False,
    )
    c.add_argument("rest", nargs=argparse.REMAINDER)
    c.set_defaults(func=cmd_convert)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    console = Console(stderr=False, highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 120)
    err_console = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        return args.func(args, console)
    except CompatError as err:
        if getattr(args, "json", False):
            print(json.dumps({"error": str(err), "exit_code": err.exit_code}))
        err_console.print(Text.assemble(("error: ", "bold red"), str(err)))
        return err.exit_code
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
