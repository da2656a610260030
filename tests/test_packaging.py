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
