"""The type check is part of the test command: `python -m mypy`, as pyproject.toml's [tool.mypy] configures it,
passes over every module of the installed package `compat` (all five folders package-dir maps into it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VIEW = ROOT / "typecheck" / "compat"  # one symlink per mapped folder (see [tool.mypy] in pyproject.toml)
SUCCESS = re.compile(r"^Success: no issues found in (\d+) source files?$", re.MULTILINE)


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _package_dir() -> dict[str, str]:
    return _pyproject()["tool"]["setuptools"]["package-dir"]


def test_mypy_passes_over_every_module_of_the_package():
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}  # the configuration alone says where modules are
    # the cache is .mypy_cache/ in the repository (gitignored): a second run takes about a second
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    checked = SUCCESS.search(run.stdout)
    assert checked is not None, run.stdout[-2000:]
    python_files = sum(len(list((ROOT / folder).rglob("*.py"))) for folder in _package_dir().values())
    # compat/ alone holds about half of them: the count shows mypy followed the mapping into the other folders
    assert int(checked.group(1)) >= max(100, python_files)


def test_the_typecheck_view_mirrors_package_dir():
    mapped = {name.removeprefix("compat."): folder for name, folder in _package_dir().items() if name != "compat"}
    links = {path.name: path for path in VIEW.iterdir()}
    assert set(links) == set(mapped)
    for name, folder in mapped.items():
        assert links[name].is_symlink() and links[name].resolve() == (ROOT / folder).resolve(), name
    assert not (VIEW / "__init__.py").exists()  # compat itself is the folder compat/; this one only lends its subfolders
    assert set(_pyproject()["tool"]["mypy"]["packages"]) == set(_package_dir())
