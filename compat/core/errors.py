"""Exit codes and the errors that map to them.

Every command uses the same codes so CI scripts can tell "your setup is wrong" from
"the tool could not get the engine source" from "a check failed".
"""

EXIT_OK = 0
EXIT_CHECK_FAILED = 1  # a check failed (doctor), or what convert wrote did not verify
EXIT_USAGE = 2  # bad command line, or a path / model name that names nothing (argparse uses 2 as well)
EXIT_SOURCE = 3  # the engine source could not be obtained (no such release, offline, not a tree)
EXIT_REFUSED = 4  # an input exists but is not what was expected, or the output exists (nothing changed)
EXIT_REPORT_FAILED = 5  # the work was done (a report made, a change made), printing it failed (stdout closed or full)
EXIT_INTERRUPTED = 130  # SIGINT/SIGTERM (128 + 2, the shell's convention)


class CompatError(Exception):
    """An error with a message meant for the user; `exit_code` says which kind."""

    exit_code = EXIT_CHECK_FAILED

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.hint = hint

    @property
    def message(self) -> str:
        """The message without the fix line."""
        return super().__str__()

    def __str__(self) -> str:
        return f"{self.message}\n  fix: {self.hint}" if self.hint else self.message


class UsageError(CompatError):
    exit_code = EXIT_USAGE


class SourceError(CompatError):
    """The engine source (installed, released or a path) cannot be obtained."""

    exit_code = EXIT_SOURCE


class RefusedError(CompatError):
    exit_code = EXIT_REFUSED


MAX_ERROR_CHARS = 2000  # an error names the input, it never echoes a huge one back (a 100 KB flag value, a body)


def clipped(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """`text`, its middle left out (and said so) when it is longer than `limit` characters."""
    if len(text) <= limit:
        return text
    keep = limit // 2
    return f"{text[:keep]} ...({len(text) - 2 * keep} characters left out)... {text[-keep:]}"

