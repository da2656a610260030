"""Helpers for the plugin tests: a real venv (no pip, no engine) holding a tiny vLLM-shaped
distribution whose CPU attention backend a real patch (vllm-cpu-attn-block16) finds and changes.

The fake engine is written here (no vLLM code is copied); it has what the patch reads: a
`CPUAttentionBackend.get_supported_kernel_block_sizes` that ends in one `return [...]` and a
'vec16' kernel path.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

CPU_ATTN = "vllm/v1/attention/backends/cpu_attn.py"
CPU_ATTN_MODULE = "vllm.v1.attention.backends.cpu_attn"

FAKE_VLLM = {
    "vllm/__init__.py": "from vllm._version import __version__\n",
    "vllm/v1/__init__.py": "",
    "vllm/v1/attention/__init__.py": "",
    "vllm/v1/attention/backends/__init__.py": "",
    CPU_ATTN: '''
        """A CPU attention backend shaped like vLLM's (written for the tests)."""


        class MultipleOf:
            def __init__(self, base):
                self.base = base

            def __repr__(self):
                return f"MultipleOf({self.base})"


        def _get_attn_isa(block_size):
            return "vec" if block_size % 32 == 0 else "vec16"


        class CPUAttentionBackend:
            @staticmethod
            def get_supported_kernel_block_sizes():
                return [MultipleOf(32)]


        def fail():
            raise RuntimeError("raised from the engine's file")
    ''',
}


def make_venv(where: Path) -> Path:
    """A real venv (without pip: pip runs from the test's own venv with --python); returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True)
    return where / "bin" / "python"


def site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_fake_vllm(site: Path, version: str = "0.30.0", files: dict[str, str] = FAKE_VLLM) -> None:
    """The fake engine as an installed distribution `vllm` (with a RECORD, as pip writes one)."""
    written = {}
    for rel, text in {**files, "vllm/_version.py": f"__version__ = version = {version!r}\n"}.items():
        data = textwrap.dedent(text).lstrip().encode()
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written[rel] = data
    info = site / f"vllm-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
    (info / "top_level.txt").write_text("vllm\n")
    rows = [f"{rel},{_record_hash(data)},{len(data)}" for rel, data in written.items()]
    (info / "RECORD").write_text("\n".join([*rows, f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]) + "\n")


def listing(site: Path) -> set[str]:
    """Every file below site-packages (bytecode caches aside)."""
    return {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def hashes(root: Path, rels) -> dict[str, str]:
    return {rel: hashlib.sha256((root / rel).read_bytes()).hexdigest() for rel in rels}


def run_python(python: Path, code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -c code` from / (no local folder on the path), bytecode not written."""
    import os

    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COMPAT_PLUGIN"))}
    full_env.update({"PYTHONDONTWRITEBYTECODE": "1", **(env or {})})
    return subprocess.run([str(python), "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                          cwd="/", env=full_env)
