"""The command line as a user meets it: the installed `compat` script run in a subprocess, from a working
directory of the test's choosing, through a real shell when a pipe is the point; fixtures it needs
(engine trees, a fake serving venv, a fake Hugging Face cache, a file:// package index) written here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPAT = Path(sys.executable).parent / "compat"  # the console script pip installed into the test venv
sys.path.insert(0, str(ROOT / "tests" / "doctor"))  # doctor_models: targets and drafters as their producers write them
sys.path.insert(0, str(ROOT / "tests" / "sources"))  # fake_index: a package index in a folder


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)


def compat(*args: str, cwd: Path | str | None = None, env: dict | None = None, timeout: int = 600) -> Run:
    """`compat ARGS` as a user types it (the installed script, not an in-process call)."""
    proc = subprocess.run([str(COMPAT), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def shell(command: str, *, cwd: Path | str | None = None, env: dict | None = None, timeout: int = 600) -> Run:
    """A bash command line (pipes and all), with `compat` on PATH; stdout is what the last command printed."""
    env = dict(env or os.environ)
    env["PATH"] = f"{COMPAT.parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def isolated_env(tmp_path: Path, **extra: str) -> dict:
    """This machine's caches and settings kept out: its own XDG cache, no pip config, no colour settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "HF_HOME",
                        "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "COMPAT_FACTS_DIR", "XDG_CACHE_HOME")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg-cache"), PIP_CONFIG_FILE=os.devnull, **extra)
    return env


def engine_tree(root: Path, engine: str = "vllm", version: str = "0.20.0") -> Path:
    """A minimal source tree (`--path` takes it): the package with its version, nothing an EAGLE-3 probe finds."""
    pkg = root / engine
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_version.py").write_text(f"__version__ = {version!r}\n")
    return root


def fake_serving_venv(where: Path, *, engine: str = "vllm", version: str = "0.20.0", tree: Path | None = None) -> Path:
    """A real venv (no pip) whose site-packages holds an engine distribution: `tree`'s package copied in, or a
    minimal one, with a dist-info whose RECORD names its __init__.py (how compat finds installed engines)."""
    import shutil

    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    site = next((where / "lib").glob("python3*/site-packages"))
    if tree is not None:
        shutil.copytree(tree / engine, site / engine)
    else:
        engine_tree(site, engine, version)
    info = site / f"{engine}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {engine}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"{engine}/__init__.py,,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
    return where / "bin" / "python"


def kimi_pair(where: Path) -> tuple[Path, Path]:
    """A Kimi-K2 target (config only) and a SpecForge-layout drafter for it, as their producers write them."""
    from doctor_models import kimi_k2_target, specforge_drafter

    return kimi_k2_target(where / "Kimi-K2-Instruct"), specforge_drafter(where / "kimi-k2-eagle3")


def hf_cache_model(hub: Path, repo_id: str, files: dict[str, bytes], *, commit: str = "0123456789abcdef0123456789abcdef01234567",
                   ref: str | None = "main") -> Path:
    """A repository in a Hugging Face hub cache laid out as huggingface_hub writes it: blobs/<hash>,
    snapshots/<commit>/<file> -> ../../blobs/<hash>, refs/<ref> holding the commit."""
    import hashlib

    repo = hub / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    (repo / "blobs").mkdir(exist_ok=True)
    for name, data in files.items():
        digest = hashlib.sha256(data).hexdigest()
        (repo / "blobs" / digest).write_bytes(data)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(repo / "blobs" / digest, link.parent))
    if ref:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / ref).write_text(commit)
    return snapshot


def files_of(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def file_index(root: Path, releases: dict[str, list[str]]) -> str:
    """A file:// package index listing these releases (tiny sdists); its URL for PIP_INDEX_URL."""
    from fake_index import Index, make_sdist

    index = Index(root)
    for engine, versions in releases.items():
        for version in versions:
            index.publish(engine, f"{engine}-{version}.tar.gz", make_sdist(engine, version))
    return index.file_url
