"""Installed, everything lives under the one import name `compat`."""

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPED = {"compat": "compat", "compat.probes": "probes", "compat.patches": "patches", "compat.checkpoints": "checkpoints",
          "compat.checks": "checks"}


def test_every_package_folder_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == MAPPED
    on_disk = set()
    for name, folder in MAPPED.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            on_disk.add(".".join((name, *rel)))
    assert on_disk == set(config["packages"])


def test_wheel_holds_only_the_compat_package(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True)
    wheel = next(tmp_path.glob("compat-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"compat"}
    assert "compat/probes/__init__.py" in names and "compat/patches/__init__.py" in names
    assert "compat/checkpoints/__init__.py" in names
