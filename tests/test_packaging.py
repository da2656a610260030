"""Installed, everything lives under the one import name `compat`."""

import importlib.util
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPED = {"compat": "compat", "compat.probes": "probes", "compat.patches": "patches", "compat.checkpoints": "checkpoints",
          "compat.checks": "checks", "compat.methods": "methods"}


def test_every_package_folder_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == MAPPED
    on_disk = set()
    for name, folder in MAPPED.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            on_disk.add(".".join((name, *rel)))
    assert on_disk == set(config["packages"])


def _builds_without_isolation() -> bool:
    """This interpreter's own setuptools can build the wheel: it has bdist_wheel (setuptools >= 70.1), or the
    `wheel` package is there to give it one. A venv made by `python -m venv` carries an older setuptools and no
    `wheel`; there pip builds in an isolated environment instead (setuptools from the package index)."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.version import Version

    try:
        setuptools_version = Version(version("setuptools"))
    except PackageNotFoundError:
        return False
    return setuptools_version >= Version("70.1") or importlib.util.find_spec("wheel") is not None


def test_wheel_holds_only_the_compat_package(tmp_path):
    isolation = ["--no-build-isolation"] if _builds_without_isolation() else []
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w", str(tmp_path), str(ROOT)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = next(tmp_path.glob("compat-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"compat"}
    assert "compat/probes/__init__.py" in names and "compat/patches/__init__.py" in names
    assert "compat/checkpoints/__init__.py" in names


def _collected_imports() -> dict[str, set[str]]:
    """Top-level name -> the files importing it at module level that pytest reads while collecting: the test files,
    the conftest files, and the tests' own modules they import so (a script run inside a peers venv is not one)."""
    import ast

    by_stem: dict[str, list[Path]] = {}
    for path in (ROOT / "tests").rglob("*.py"):
        by_stem.setdefault(path.stem, []).append(path)
    todo = [p for p in (ROOT / "tests").rglob("*.py") if p.name.startswith("test_") or p.name == "conftest.py"]
    seen: set[Path] = set()
    found: dict[str, set[str]] = {}
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for node in ast.parse(path.read_text(), str(path)).body:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            for name in names:
                top = name.split(".")[0]
                found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
                todo += by_stem.get(top, [])
    return found


def test_what_the_tests_import_when_collected_is_declared():
    """Issue 40: `pip install -e .[test]` then `pytest` stopped at collection: a test imports pydantic at its top, which
    the test extra did not declare. Each module a test file imports at module level is the standard library's, compat's
    or the tests' own, a part's (tests/parts.py), or a distribution of compat's dependencies or its test extra."""
    import re
    from importlib.metadata import packages_distributions

    sys.path.insert(0, str(ROOT / "tests"))
    import parts

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower().replace("_", "-")
                for req in [*project["dependencies"], *project["optional-dependencies"]["test"]]}
    local = {p.stem for p in (ROOT / "tests").rglob("*.py")} | {p.name for p in (ROOT / "tests").rglob("*") if p.is_dir()}
    part_modules = {"torch", "ray", "numpy"}  # parts.module() imports a part's module; numpy comes with the test extra
    assert {p.name for p in parts.PARTS} >= {"torch", "ray"}
    distributions = packages_distributions()
    undeclared = {}
    for name, files in _collected_imports().items():
        if name in sys.stdlib_module_names or name in ("compat", "__future__") or name in local or name in part_modules:
            continue
        owners = {d.lower().replace("_", "-") for d in distributions.get(name, [name])}
        if not owners & declared:
            undeclared[name] = sorted(files)
    assert not undeclared, undeclared
