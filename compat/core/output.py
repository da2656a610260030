"""What every command prints the same way: the exit codes in --help, and JSON documents (with their schema).

The exit codes are one table (`EXIT_TABLE`), printed at the end of every `--help` (`exit_codes()`,
with a command's own examples of a code where it helps) and used by every command:

    0    done: report produced, checks pass, patch applied, checkpoint written, cache cleaned
    1    a check failed (doctor: it will not launch or will degrade; convert: verification failed)
    2    usage error: an unknown option, a bad value, a path or model name that names nothing
    3    the engine source could not be obtained (no such release, offline with an empty cache, not a tree)
    4    refused: an input exists but is not what was expected (a directory without config.json, a
         broken header, a file changed since compat patched it), or the output exists; nothing changed
    5    the work was done (a report made, a patch applied), but printing the result failed (stdout
         closed or full)
    130  interrupted (Ctrl-C, SIGTERM): what was half done is undone

Under `--json` an error is one document on stdout, whatever the command and however early it
happens (argparse's usage errors included): `{"schema": "compat.error/1", "error": ..., "fix": ... or
null, "exit_code": ...}`; the same message is on stderr for people.
"""

from __future__ import annotations

import contextlib
import json

SCHEMA_VERSION = 1  # bumped when a key of a JSON document changes meaning or goes away

EXIT_TABLE: dict[int, str] = {
    0: "done (report produced, checks pass, patch applied, checkpoint written)",
    1: "a check failed",
    2: "usage error: an unknown option, a bad value, a path or model name that names nothing",
    3: "the engine source could not be obtained (no such release, offline with an empty cache, not a tree)",
    4: "refused: an input exists but is not what was expected (a directory without config.json, a broken\n"
       "header), or the output exists; nothing was changed",
    5: "the work was done (a report made, a patch applied), but printing the result failed (stdout closed\n"
       "or full)",
    130: "interrupted (Ctrl-C, SIGTERM): what was half done is undone",
}


def exit_codes(**details: str) -> str:
    """The exit-code table for a --help epilog; `details` (keyword `c1="..."`) says what a code means for one command."""
    lines = ["exit codes (the same for every compat command):"]
    for code, meaning in EXIT_TABLE.items():
        first, *rest = meaning.split("\n")
        lines.append(f"  {code:<4} {first}")
        lines.extend(f"       {line}" for line in rest)
        if details.get(f"c{code}"):
            lines.append(f"       here: {details[f'c{code}']}")
    return "\n".join(lines) + "\n"


EXIT_CODES = exit_codes()


def add_json_argument(parser, help_text: str = "print the result as JSON (stable keys, for CI)") -> None:
    parser.add_argument("--json", action="store_true", help=help_text)


def print_json(document: dict, kind: str) -> None:
    """One JSON document on stdout, with `schema` naming its kind and version first (a probe report's facts not
    decoded are copied as the facts cache holds their text: compat/core/lazy_json.py)."""
    import sys

    from compat.core.lazy_json import LazyDict, write_indented

    if not isinstance(document, LazyDict):
        print(json.dumps({"schema": f"compat.{kind}/{SCHEMA_VERSION}", **document}, indent=2))
        return
    full = LazyDict(schema=f"compat.{kind}/{SCHEMA_VERSION}")
    for key, value in dict.items(document):
        dict.__setitem__(full, key, value)
    write_indented(full, sys.stdout)
    sys.stdout.write("\n")


def error_document(message: str, fix: str | None, exit_code: int) -> dict:
    """The one shape of an error under --json, whatever the command."""
    return {"error": message, "fix": fix, "exit_code": exit_code}


def human_size(n: float) -> str:
    """1536 -> "1.5 KiB": sizes as people read them (binary units, one decimal)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


@contextlib.contextmanager
def exit_code_if_unread(code: int):
    """Printing the result of work whose exit code is already known (a failed check, an error): should the
    reader go away meanwhile, the run still exits with that code (compat/cli.py ends it quietly)."""
    try:
        yield
    except BrokenPipeError as gone:
        setattr(gone, "exit_code", code)  # an attribute of our own: compat/cli.py reads it back (getattr)
        raise


class OutputFailed(OSError):
    """Writing to stdout failed (a full disk, an I/O error, a closed descriptor): exit 5, not a traceback. The reader
    going away (BrokenPipeError) is not this: compat/cli.py ends that run quietly."""


class GuardedStdout:
    """sys.stdout while a command runs: its write or flush failing raises OutputFailed (the errno kept), so the one
    place where errors become exit codes (compat/cli.py) can tell the result's printing failing from any other OSError."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self.failed: OutputFailed | None = None  # kept: argparse's help swallows an OSError of its stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as err:
            raise self._failed(err) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as err:
            raise self._failed(err) from None

    def _failed(self, err: OSError) -> OutputFailed:
        self.failed = OutputFailed(err.errno, err.strerror or str(err))
        return self.failed

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def plural(n: int, noun: str) -> str:
    """`1 finding`, `2 findings`, `1 class`, `3 classes`, `1 entry`, `0 entries`: a count with its noun, as said."""
    if n == 1:
        return f"{n} {noun}"
    if noun.endswith(("s", "x", "ch", "sh")):
        return f"{n} {noun}es"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return f"{n} {noun[:-1]}ies"
    return f"{n} {noun}s"


# The two kinds of --help examples (tools/readme_examples.py holds every example to them): those that run as written
# in the folder `compat samples .` writes, and those that need what the user brings (a serving venv, a server, ...).
EXAMPLES_HERE = "examples, in the folder `compat samples .` writes (each runs as written there):"


def examples_yours(what: str) -> str:
    """The heading of the --help examples that need what the user brings: `what`, in words."""
    return f"examples with what you bring ({what}):"
