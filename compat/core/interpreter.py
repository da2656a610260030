"""The interpreter an engine lives in: this one, or another (`--python`, the serving venv's python).

One value for "which python": `Interpreter.of(given)` turns what the user typed (a python, a symlink
to one, or a venv directory) into the python to run, once, absolute against the directory it was typed
in. Every part that looks into or runs another interpreter takes this value (the installed engines, the
plugin's site-packages and hook, `compat env`, the engine `compat verify` runs). Questions go through
`run_json`, which always runs it with `-E` (no PYTHON* variable of this shell leaks in), from "/" (no
folder of the user's shadows a package) and with a timeout, and turns every failure into an
`InterpreterError` that names the interpreter and the fix. (The engine itself is run as it is served,
with this shell's environment: compat/verify/engine.py.)
"""

from __future__ import annotations

import errno
import json
import os
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from compat.core.errors import SourceError

DEFAULT_TIMEOUT_S = 60.0
SERVING_PYTHON_FIX = "pass the serving venv's python, e.g. /opt/venv/bin/python"
# Run inside the interpreter asked: stdlib only, any Python 3.
_ABOUT = ("import json, platform, sys, sysconfig; print(json.dumps({'prefix': sys.prefix, "
          "'version': platform.python_version(), 'purelib': sysconfig.get_paths()['purelib']}))")


class InterpreterError(SourceError):
    """An interpreter that is not there, cannot be run, or did not answer (exit 3: the engine's source
    cannot be obtained from it). `python` is the interpreter's path."""

    def __init__(self, message: str, *, python: str, hint: str | None = SERVING_PYTHON_FIX):
        super().__init__(message, hint=hint)
        self.python = python


class NoSuchInterpreter(InterpreterError):
    """Nothing at the path (a venv directory without bin/python included): a path that names nothing, exit 2."""

    exit_code = 2  # EXIT_USAGE (compat/core/errors.py; the exit-code table: "a path ... that names nothing")


class NotAnInterpreter(InterpreterError):
    """Something is at the path, but not a program this system can run (a text file, a folder that is no venv, a
    binary of another platform): an input that exists but is not what was expected, exit 4."""

    exit_code = 4  # EXIT_REFUSED (the exit-code table: "an input exists but is not what was expected")


class InterpreterFailed(InterpreterError):
    """It could not be started, ran out of time, exited with an error or printed no answer.

    `reason` is one of REASONS; `detail` says it in words (the OS error, the end of stderr); `stderr` is the end
    of what it wrote there; `returncode` is None when it did not exit by itself (could not start, or was stopped
    at the timeout)."""

    REASONS = ("cannot start", "timeout", "exit code", "no answer")

    def __init__(self, message: str, *, python: str, reason: str, detail: str, stderr: str = "",
                 returncode: int | None = None, hint: str | None = None):
        super().__init__(message, python=python, hint=hint)
        self.reason = reason
        self.detail = detail
        self.stderr = stderr
        self.returncode = returncode

    @property
    def started(self) -> bool:
        """Did it run (and fail or print nothing), rather than not start or not finish?"""
        return self.reason in ("exit code", "no answer")


@dataclass(frozen=True)
class About:
    """What an interpreter says about itself."""

    venv: Path  # sys.prefix: the venv (or the installation) it runs in
    version: str  # platform.python_version(), e.g. 3.11.9
    purelib: Path  # where its pure-Python packages and .pth files are (site-packages)


@dataclass(frozen=True)
class Interpreter:
    """A python to look into or run: `path` is absolute with symlinks kept (a venv's python is a symlink to
    the base interpreter; resolving it would leave the venv)."""

    path: str

    @classmethod
    def current(cls) -> Interpreter:
        """The interpreter compat runs in."""
        return cls(sys.executable)

    @classmethod
    def of(cls, given: Interpreter | str | os.PathLike[str] | None) -> Interpreter:
        """What the user named (`--python`): a python or a venv directory (its bin/python); None: this one.

        Relative paths are made absolute against the working directory and `~` is expanded, so the same
        value means the same interpreter in a subprocess started elsewhere and in every command printed."""
        if given is None:
            return cls.current()
        if isinstance(given, Interpreter):
            return given
        path = Path(os.path.abspath(os.path.expanduser(os.fspath(given))))
        if path.is_dir():  # a venv directory given instead of its interpreter
            path = path / "bin" / "python"
        return cls(str(path))

    def __str__(self) -> str:
        return self.path

    def __fspath__(self) -> str:
        return self.path

    @property
    def is_current(self) -> bool:
        """Is it the interpreter compat runs in (asked in this process, no subprocess needed)?"""
        return self.path == sys.executable

    @property
    def label(self) -> str:
        """How messages name it: as the option that names it."""
        return f"--python {self.path}"

    def must_exist(self) -> Interpreter:
        """This interpreter, when something is at its path (checked before any work: a --python beside a release is
        otherwise only named in the fixes printed, never run); NoSuchInterpreter (exit 2) when nothing is."""
        if not os.path.exists(self.path):
            raise NoSuchInterpreter(f"{self.label}: no such interpreter", python=self.path)
        return self

    # -- what it says about itself -----------------------------------------------------------------
    @cached_property
    def about(self) -> About:
        """Its venv, version and site-packages, asked of it once (even of this one: under -E, as the others)."""
        data = self.run_json(_ABOUT, what="ask it for its site-packages")
        return About(Path(data["prefix"]), str(data["version"]), Path(data["purelib"]))

    @property
    def venv(self) -> Path:
        return self.about.venv

    @property
    def version(self) -> str:
        return self.about.version

    @property
    def purelib(self) -> Path:
        return self.about.purelib

    # -- running code in it --------------------------------------------------------------------------
    def run_json(self, code: str, *, what: str, timeout: float = DEFAULT_TIMEOUT_S) -> Any:
        """Run `code` (`python -E -c code`, from "/") and return the JSON document its last line of stdout is.

        `what` completes "could not ..." in the error (e.g. "run it to look for engines"). Raises
        NoSuchInterpreter when nothing is at the path, InterpreterFailed when it cannot be started, runs out
        of `timeout` seconds, exits with an error or prints no JSON."""
        import subprocess  # only to run another interpreter: it costs milliseconds at start-up

        if not os.path.exists(self.path):
            raise NoSuchInterpreter(f"{self.label}: no such interpreter", python=self.path)
        argv = [self.path, "-E", "-c", code]
        try:
            # -E: ignore PYTHON* variables of this shell; cwd="/": no local folder shadows a package.
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd="/")
        except subprocess.TimeoutExpired:
            raise self._failed(what, f"it did not answer within {timeout:.0f} s", reason="timeout") from None
        except OSError as err:
            if err.errno in (errno.EACCES, errno.ENOEXEC, errno.EISDIR):
                raise NotAnInterpreter(f"{self.label}: not a program this system can run ({err.strerror})",
                                       python=self.path) from None
            raise self._failed(what, str(err), reason="cannot start") from None
        stderr = (proc.stderr or "").strip()
        if proc.returncode != 0:
            raise self._failed(what, stderr or f"exit code {proc.returncode}", reason="exit code",
                               stderr=stderr, returncode=proc.returncode)
        lines = proc.stdout.strip().splitlines()
        try:
            return json.loads(lines[-1])
        except (IndexError, ValueError):
            raise self._failed(what, stderr or "it printed no answer", reason="no answer", stderr=stderr,
                               returncode=proc.returncode) from None

    def _failed(self, what: str, detail: str, *, reason: str, stderr: str = "",
                returncode: int | None = None) -> InterpreterFailed:
        import shlex

        detail = detail.strip()[-400:]
        check = shlex.join([self.path, "-E", "-c", "import sys; print(sys.version)"])
        return InterpreterFailed(f"{self.label}: could not {what}: {detail}", python=self.path, reason=reason,
                                 detail=detail, stderr=stderr[-400:], returncode=returncode,
                                 hint=f"check that it is a working Python 3.8+ ({check}), or {SERVING_PYTHON_FIX}")
