"""The `compat` command line: the parser comes from the command registry (compat/commands/), and
`main` is the one place where errors become exit codes, messages and the `--json` error object.

The command name is read first and only that command's module is imported and builds its parser (pip's
way), so a mistyped flag is reported with that command's usage and `compat probe` never imports doctor;
the top-level parser (which imports every command for its summary) is built only for `compat --help`,
`--version`, or a command that does not exist.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys

from compat import __version__
from compat.commands import command_names, get_command
from compat.output import EXIT_CODES
from compat.errors import EXIT_REFUSED, EXIT_REPORT_FAILED, EXIT_USAGE, CompatError

DESCRIPTION = ("Make EAGLE-3 drafters work on the vLLM and SGLang releases you run: probe what a release supports, "
               "patch what it lacks, convert drafters to the layout it loads, and diagnose a target + drafter pair.")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: `compat --help` lists every command with its summary."""
    parser = argparse.ArgumentParser(prog="compat", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"compat {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in command_names():
        sub.add_parser(name, help=get_command(name).SUMMARY, add_help=False)
    return parser


def command_parser(name: str) -> argparse.ArgumentParser:
    """`compat NAME`'s own parser: its usage is what a user sees when a flag is wrong."""
    module = get_command(name)
    parser = argparse.ArgumentParser(prog=f"compat {name}", description=module.DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=getattr(module, "EPILOG", EXIT_CODES))
    module.add_arguments(parser)
    return parser


def parse(argv: list[str]) -> argparse.Namespace | None:
    """The namespace of the command argv names (with `.command`), or None after top-level help/version."""
    name = next((a for a in argv if not a.startswith("-")), None)
    if name is None or get_command(name) is None:
        top = build_parser()
        top.parse_args(argv)  # --help / --version exit here; an unknown command is a usage error (exit 2)
        top.print_help()
        return None
    before = argv[:argv.index(name)]
    if before:
        build_parser().parse_args(before)  # only --help / --version may come before the command
    parser = command_parser(name)
    args, extra = parser.parse_known_args(argv[argv.index(name) + 1:])
    if extra:  # said by the innermost parser (`compat convert ckpt`), with its usage
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    args.command = name
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    if args is None:
        return EXIT_USAGE
    from compat.console import make_consoles

    console, err_console = make_consoles(args)
    console.on_broken_pipe = _broken_pipe  # rich would exit 1 on its own; below we say what was done
    try:
        code = get_command(args.command).run(args, console)
        sys.stdout.flush()  # a closed or full stdout fails here, while we still know what was done
        return code
    except CompatError as err:
        return _report_error(err, args, err_console)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
    except OSError as err:
        # A command that changes things says what it changed in args.change_made (None: nothing yet),
        # and turns its own file errors into CompatErrors: an OSError left is its output failing.
        made = getattr(args, "change_made", False)
        if made is False or err.filename is not None:
            if not isinstance(err, BrokenPipeError):
                raise
            _silence_stdout()
            return 0  # the reader of our output went away (`compat probe --json | head`): not a failure of ours
        _silence_stdout()
        done = f"{made}, but" if made else "nothing was changed;"
        err_console.print(f"error: {done} printing the result failed ({err.strerror or err})", markup=False)
        return EXIT_REPORT_FAILED if made else EXIT_REFUSED


def _report_error(err: CompatError, args, err_console) -> int:
    from rich.text import Text

    from compat.output import error_document, print_json

    if getattr(args, "json", False):
        print_json(error_document(err.message, err.hint, err.exit_code), "error")
    err_console.print(Text.assemble(("error: ", "bold red"), str(err)))
    return err.exit_code


def _broken_pipe() -> None:
    raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
