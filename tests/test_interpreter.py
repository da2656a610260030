"""compat/core/interpreter.py: one value for "which python", and one way to ask another interpreter a question.

Real interpreters only: this one, a venv made here (no pip in it: it is only asked about itself), and a
script that is not a python. What must hold: a venv directory and its python name the same interpreter;
every question runs with -E, from "/" and with a timeout; every failure is a typed error (exit 3) that
names the interpreter.
"""

from __future__ import annotations

import os
import platform
import re
import sys
import venv
from pathlib import Path

import pytest

from compat.core.errors import EXIT_REFUSED, EXIT_USAGE, CompatError
from compat.core.interpreter import Interpreter, InterpreterFailed, NoSuchInterpreter, NotAnInterpreter

ASK = "import json, os, sys; print(json.dumps({'cwd': os.getcwd(), 'path': sys.path, 'flags': sys.flags.ignore_environment}))"


@pytest.fixture(scope="module")
def made_venv(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("venvs") / "serve"
    venv.create(where, with_pip=False, symlinks=True)
    return where


def test_a_venv_directory_and_its_python_are_the_same_interpreter(made_venv, monkeypatch):
    python = made_venv / "bin" / "python"
    assert Interpreter.of(made_venv) == Interpreter.of(python) == Interpreter(str(python))
    assert Interpreter.of(made_venv).venv == made_venv  # sys.prefix, asked of it
    monkeypatch.chdir(made_venv.parent)
    relative = Interpreter.of("./serve/bin/python")
    assert relative.path == str(python)  # absolute against where it was typed, the symlink kept
    assert Path(relative.path).is_symlink() and relative.path != os.path.realpath(relative.path)


def test_this_interpreter(monkeypatch):
    this = Interpreter.of(None)
    assert this == Interpreter.current() and this.is_current and this.path == sys.executable
    assert Interpreter.of(this) is this
    assert this.version == platform.python_version()
    assert this.venv == Path(sys.prefix)
    assert str(this) == os.fspath(this) == sys.executable and this.label == f"--python {sys.executable}"


def test_questions_run_isolated_from_the_shell_and_the_working_directory(tmp_path, monkeypatch):
    shadow = tmp_path / "json"  # a folder named like a stdlib module, where a user might stand
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise SystemExit('the shadowing json was imported')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    answer = Interpreter.current().run_json(ASK, what="answer")
    assert answer["cwd"] == "/" and answer["flags"] == 1
    assert str(tmp_path) not in answer["path"]


def test_a_missing_interpreter_is_named_with_the_fix(tmp_path):
    missing = Interpreter.of(tmp_path / "nope")  # not a directory: taken as the python itself
    with pytest.raises(NoSuchInterpreter, match=f"^--python {re.escape(str(tmp_path / 'nope'))}: no such interpreter\n  fix: ") as err:
        missing.run_json(ASK, what="answer")
    assert isinstance(err.value, CompatError) and err.value.exit_code == EXIT_USAGE  # a path naming nothing: 2
    assert err.value.message == f"--python {tmp_path / 'nope'}: no such interpreter"
    assert err.value.hint and "/bin/python" in err.value.hint and err.value.python == str(tmp_path / "nope")
    empty = tmp_path / "empty-venv"
    empty.mkdir()
    with pytest.raises(NoSuchInterpreter, match=f"{empty / 'bin' / 'python'}: no such interpreter"):
        Interpreter.of(empty).about


def test_failures_are_typed_and_say_what_happened(tmp_path):
    this = Interpreter.current()
    with pytest.raises(InterpreterFailed, match=f"^--python {re.escape(sys.executable)}: could not look for engines: the engine is broken here\n  fix: ") as err:
        this.run_json("import sys; sys.exit('the engine is broken here')", what="look for engines")
    assert err.value.reason == "exit code" and err.value.returncode == 1 and err.value.started
    assert err.value.message == f"--python {sys.executable}: could not look for engines: the engine is broken here"
    assert err.value.hint and f"{sys.executable} -E -c" in err.value.hint  # how to see it for oneself
    with pytest.raises(InterpreterFailed, match=f"^--python {re.escape(sys.executable)}: could not answer: it printed no answer\n") as err:
        this.run_json("print('not json')", what="answer")
    assert err.value.reason == "no answer" and err.value.started
    with pytest.raises(InterpreterFailed, match=f"^--python {re.escape(sys.executable)}: could not answer: it did not answer within ") as err:
        this.run_json("import time; time.sleep(30)", what="answer", timeout=0.5)
    assert err.value.reason == "timeout" and err.value.returncode is None and not err.value.started
    assert "did not answer within" in err.value.message
    script = tmp_path / "not-a-python"
    script.write_text("not an executable\n")
    with pytest.raises(NotAnInterpreter, match=f"^--python {re.escape(str(script))}: not a program this system can run") as err:
        # there, but not a program: the wrong kind of input (4)
        Interpreter.of(script).run_json(ASK, what="answer")
    assert "not a program this system can run (Permission denied)" in err.value.message
    assert err.value.exit_code == EXIT_REFUSED
