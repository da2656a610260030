"""The `compat` command line: the parser comes from the command registry (compat/commands/), and
`main` is the one place where errors become exit codes, messages and the `--json` error object.

The command name is read first and only that command's module is imported and builds its parser (pip's
way), so a mistyped flag is reported with that command's usage and `compat probe` never imports doctor;
the top-level parser (which imports every command for its summary) is built only for `compat --help`,
`--version`, or a command that does not exist.

The global options (-q, -v, --color) go before or after the command name. Every early exit speaks
the same way: a usage error prints the usage of the (sub)command it is about, and with `--json` on
the line the error is also one JSON document on stdout (compat/core/output.py error_document).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from compat import __version__
from compat.commands import command_names, get_command
from compat.core.output import EXIT_CODES, GuardedStdout, OutputFailed, exit_code_if_unread
from compat.core.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED, EXIT_REPORT_FAILED, EXIT_USAGE, CompatError

TYPE_CHECKING = False  # typing costs milliseconds to import at start-up; mypy reads this as True
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

DESCRIPTION = ("Make speculative-decoding drafters (EAGLE-3, DFlash, DSpark, P-EAGLE, MTP heads, draft models, n-gram, ...) "
               "work on the vLLM and SGLang releases you run: probe what a release supports, patch what it lacks, convert "
               "drafters to what it loads, diagnose a target + drafter pair, explain an engine's error, and measure "
               "acceptance.")

_VALUED_GLOBALS = ("--color",)  # global options that take a value (the next word is not the command)


class UsageProblem(Exception):
    """An argparse usage error, raised instead of exiting so that main can answer it in --json too."""

    def __init__(self, parser: argparse.ArgumentParser, message: str):
        super().__init__(message)
        self.parser = parser
        self.message = message


class CompatParser(argparse.ArgumentParser):
    """argparse, but a usage error is raised (UsageProblem) rather than printed and exited on the spot.
    Subparsers (`compat convert ckpt`) are made of this class too (argparse uses the parent's class)."""

    def error(self, message: str):
        raise UsageProblem(self, message)


def add_global_arguments(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """-q / -v / --color; `suppress`: leave them out of the namespace unless given (the command's copy)."""
    default: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress else {}
    group = parser.add_argument_group("global options (before or after the command name)")
    group.add_argument("-q", "--quiet", action="count", help="no progress bars or notes on stderr; -qq: nothing on stdout "
                       "either (the exit code says it)",
                       **(default or {"default": 0}))
    group.add_argument("-v", "--verbose", action="count", help="where an error was raised, and the run's time (stderr)",
                       **(default or {"default": 0}))
    group.add_argument("--color", choices=("auto", "always", "never"), metavar="WHEN",
                       help="auto (default: colour on a terminal; NO_COLOR turns it off, FORCE_COLOR on), always, never",
                       **(default or {"default": None}))


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: `compat --help` lists every command with its summary."""
    parser = CompatParser(prog="compat", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
                          epilog=EXIT_CODES)  # the global options are listed once, as their group
    parser.add_argument("--version", action="version", version=f"compat {__version__}")
    add_global_arguments(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in command_names():
        sub.add_parser(name, help=_command(name).SUMMARY, add_help=False)
    return parser


def command_parser(name: str) -> argparse.ArgumentParser:
    """`compat NAME`'s own parser: its usage is what a user sees when a flag is wrong."""
    module = _command(name)
    parser = CompatParser(prog=f"compat {name}", description=module.DESCRIPTION,
                          formatter_class=argparse.RawDescriptionHelpFormatter, epilog=getattr(module, "EPILOG", EXIT_CODES))
    module.add_arguments(parser)
    if getattr(module, "FLEET", False):  # --host/--hosts/--ray: declared once, for every command that runs on hosts
        from compat.fleet import add_fleet_arguments

        add_fleet_arguments(parser)
    _add_globals_everywhere(parser)
    return parser


def _add_globals_everywhere(parser: argparse.ArgumentParser) -> None:
    """The global options on a command's parser and on each of its subcommands' (`compat convert ckpt -q`)."""
    add_global_arguments(parser, suppress=True)
    for action in parser._actions:  # noqa: SLF001 - argparse keeps its subparsers only there
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for sub in dict.fromkeys(action.choices.values()):
                _add_globals_everywhere(sub)


def _command(name: str) -> ModuleType:
    """The module of a command known to exist (named by the registry, or checked by parse)."""
    module = get_command(name)
    assert module is not None, name
    return module


def _command_position(argv: list[str]) -> int | None:
    """Index of the command name: the first word that is neither an option nor a global option's value."""
    skip = False
    for i, word in enumerate(argv):
        if skip:
            skip = False
        elif word in _VALUED_GLOBALS:
            skip = True
        elif not word.startswith("-"):
            return i
    return None


def parse(argv: list[str]) -> argparse.Namespace | None:
    """The namespace of the command argv names (with `.command`), or None after top-level help/version."""
    at = _command_position(argv)
    if at is None or get_command(argv[at]) is None:
        top = build_parser()
        top.parse_args(argv)  # --help / --version exit here; an unknown command is a usage error (exit 2)
        top.print_help()
        return None
    name = argv[at]
    before = _parse_before(argv[:at])
    parser = command_parser(name)
    words, after = argv[at + 1:], None
    dashes = getattr(get_command(name), "AFTER_DASHES", None)  # `compat doctor ... -- vllm serve ...`: a line, kept whole
    if dashes and "--" in words:
        words, after = words[:words.index("--")], words[words.index("--") + 1:]
    args, extra = parser.parse_known_args(words)
    if dashes:
        setattr(args, dashes, after)
    if extra:  # said by the innermost parser (`compat convert ckpt`), with its usage
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    for key in ("quiet", "verbose", "color"):  # after the command wins over before it
        if not hasattr(args, key):
            setattr(args, key, getattr(before, key))
    args.command = name
    args.words = argv[at + 1:]  # as typed: fleet mode passes them on to the hosts (compat/fleet/)
    return args


def _parse_before(words: list[str]) -> argparse.Namespace:
    """What comes before the command name: the global options, or --help / --version (the whole top parser)."""
    if any(w in ("-h", "--help", "--version") for w in words):
        return build_parser().parse_args(words)  # prints and exits
    parser = CompatParser(prog="compat", add_help=False)
    add_global_arguments(parser, suppress=False)
    return parser.parse_args(words)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    previous = _terminate_as_interrupt()
    stdout = sys.stdout
    guard = sys.stdout = GuardedStdout(stdout)  # its failing to take the result (a full disk) is told from other OSErrors
    try:
        code = _main(argv)
        told = sys.stdout is not guard  # _quiet_stdout replaced it after saying so
        return code if guard.failed is None or told else _output_failed(guard.failed)  # a failure swallowed on the way
    except BrokenPipeError as gone:
        return _reader_went_away(gone)
    except OutputFailed as failed:  # a usage error's --json document, the last flush
        return _output_failed(failed)
    except SystemExit:  # --help, --version: argparse swallows its stream's errors
        if guard.failed is None:
            raise
        return _output_failed(guard.failed)
    finally:  # called in-process (tests, a script): the caller's handlers and stdout back as they were
        import signal

        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sys.stdout = stdout  # (after a failure its descriptor is /dev/null's: the final flush cannot raise)


def _terminate_as_interrupt() -> dict:
    """SIGTERM (a CI job cancelled, `kill PID`, `timeout`) and SIGHUP (the terminal closed) end a run as Ctrl-C does:
    a KeyboardInterrupt, so what was half done is undone by the same cleanup, then one line and exit 130. A command
    that must not be cut at some instant (convert's swap) installs its own handler around it."""
    import signal

    def interrupt(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {}
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) in (signal.SIG_DFL, None):
            previous[signum] = signal.signal(signum, interrupt)
    return previous  # what to put back


def _main(argv: list[str]) -> int:
    started = time.monotonic()
    try:
        args = parse(argv)
    except UsageProblem as problem:
        return _report_usage(problem, argv)
    except SystemExit:  # --help, --version: flushed here, so a reader gone away (`| head`) is handled by main
        sys.stdout.flush()
        raise
    if args is None:
        return EXIT_USAGE
    from compat.core.console import make_consoles

    console, err_console = make_consoles(args)
    code = _run(args, console, err_console)
    with exit_code_if_unread(code):  # here, not at interpreter exit: a reader gone away is handled by main
        sys.stdout.flush()
    if args.verbose:
        err_console.print(f"compat {args.command}: exit {code} in {time.monotonic() - started:.2f} s")
    return code


def _run(args, console, err_console) -> int:
    try:
        if getattr(args, "host", None) or getattr(args, "hosts", None) or getattr(args, "ray", None):
            from compat import fleet  # the same command on other hosts (compat/fleet/): imported only then

            return fleet.run(args, args.words, console, err_console)
        return _command(args.command).run(args, console)
    except CompatError as err:
        return _report_error(err, args, err_console)
    except KeyboardInterrupt as signal:  # Ctrl-C, or SIGTERM/SIGHUP during a conversion (its cleanup has run)
        return _report_error(_Interrupted(f"interrupted ({signal})" if str(signal) else "interrupted"), args, err_console)
    except OSError as err:
        # A command that changes things says what it changed in args.change_made (None: nothing yet) and turns
        # its own file errors into CompatErrors: an OSError left is its output failing after (or before) the change.
        made = getattr(args, "change_made", False)
        if made is False and isinstance(err, OutputFailed):
            return _output_failed(err)  # a report made, not printed: exit 5 as the help says
        if err.filename is not None:  # a file no command expected to fail (the cache this user may not read, ...)
            return _report_error(_file_error(err, args), args, err_console)
        if made is False or (made is None and isinstance(err, BrokenPipeError)):
            raise  # a reader gone away before any change (main ends it quietly), or not ours to explain
        _quiet_stdout()
        done = f"{made}, but" if made else "nothing was changed;"
        err_console.print(f"error: {done} printing the result failed ({err.strerror or err})", markup=False)
        return EXIT_REPORT_FAILED if made else EXIT_REFUSED


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so neither rich nor the interpreter's final flush raises again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    sys.stdout = open(os.devnull, "w", encoding="utf-8")  # what is still buffered in the old one is dropped


def _file_error(err: OSError, args) -> CompatError:
    """One line for a file error a command left unsaid: the cache's own (exit 3, its fix), or the file's (exit 4)."""
    from compat.sources.cache import cache_os_error, cache_root, within_cache

    cache = cache_root(getattr(args, "cache_dir", None))
    if within_cache(err, cache):
        return cache_os_error(err, cache, f"running compat {args.command}")
    from compat.core.files import refuse_os_error

    return refuse_os_error(err, None, f"running compat {args.command}")


def _output_failed(failed: OutputFailed) -> int:
    """stdout could not take the result (`> /dev/full`, an I/O error): one line on stderr, exit 5."""
    _quiet_stdout()
    print(f"error: printing the result failed ({failed.strerror or failed})\n"
          "  fix: send the output where there is room (another file or disk, or a pipe)", file=sys.stderr)
    return EXIT_REPORT_FAILED


class _Interrupted(CompatError):
    exit_code = EXIT_INTERRUPTED


def _report_error(err: CompatError, args, err_console) -> int:
    from rich.text import Text

    from compat.core.output import error_document, print_json

    from compat.core.errors import clipped

    message, hint = clipped(err.message), clipped(err.hint) if err.hint else err.hint
    if getattr(args, "json", False):
        with exit_code_if_unread(err.exit_code):
            print_json(error_document(message, hint, err.exit_code), "error")
    err_console.print(Text.assemble(("error: ", "bold red"), f"{message}\n  fix: {hint}" if hint else message))
    if args.verbose:
        import traceback

        where = traceback.extract_tb(err.__traceback__)[-1]
        err_console.print(f"  (raised at {where.filename}:{where.lineno} in {where.name}, {type(err).__name__})")
    return err.exit_code


def _report_usage(problem: UsageProblem, argv: list[str]) -> int:
    """argparse's message with the usage of the parser it is about; with --json, the error document too."""
    from compat.core.errors import clipped

    fix = clipped(_usage_fix(problem))
    message = clipped(problem.message)
    if "--json" in argv:
        from compat.core.output import error_document, print_json

        with exit_code_if_unread(EXIT_USAGE):
            print_json(error_document(f"{problem.parser.prog}: {message}", fix, EXIT_USAGE), "error")
    problem.parser.print_usage(sys.stderr)
    print(f"{problem.parser.prog}: error: {message}", file=sys.stderr)
    if fix:
        print(f"  fix: {fix}", file=sys.stderr)
    return EXIT_USAGE


def _usage_fix(problem: UsageProblem) -> str:
    """'did you mean --json?' for a mistyped option or `doctor` for `doctr`, and where the options are listed."""
    import difflib

    prog = problem.parser.prog
    if problem.message.startswith("argument COMMAND: invalid choice") and prog == "compat":  # the command name
        typed = problem.message.split("'", 2)[1] if problem.message.count("'") >= 2 else ""
        close = difflib.get_close_matches(typed, command_names(), n=1, cutoff=0.6)
        listed = "compat --help lists the commands"
        return f"did you mean compat {close[0]}? ({listed})" if close else listed
    words = problem.message.split(": ", 1)[-1].split() if "unrecognized arguments" in problem.message else []
    options = [s for action in problem.parser._actions for s in action.option_strings]  # noqa: SLF001
    guesses = [match for word in words if word.startswith("-")
               for match in difflib.get_close_matches(word.split("=")[0], options, n=1, cutoff=0.6)]
    listed = f"{prog} --help lists the options"
    return f"did you mean {', '.join(dict.fromkeys(guesses))}? ({listed})" if guesses else listed


def _reader_went_away(gone: BrokenPipeError) -> int:
    """The reader of our output went away (`compat probe --json | head -1`): not a failure of ours, so no
    traceback and exit 0, or the code of what the command found when it was known before printing
    (compat/core/output.py exit_code_if_unread: doctor's failed check stays 1 whether or not its report was read). stdout is
    pointed at /dev/null so neither rich nor the interpreter's final flush raises again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return getattr(gone, "exit_code", EXIT_OK)
