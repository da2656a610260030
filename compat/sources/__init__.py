"""Engine sources: where an engine's Python code comes from.

Three kinds, one result (an `EngineTree`), shared by probe, patch, convert and doctor:
- installed: `--engine vllm` (this interpreter) or with `--python PATH` (another one);
- released:  `--engine vllm==0.11.0`, `--engine "sglang>=0.5.8,<0.6"`, `--engine vllm==latest`:
             fetched from the package index into the user cache (see released.py);
- path:      `--path DIR`, a checkout, an unpacked release or a hand-edited copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from compat import engines
from compat.core.errors import SourceError, UsageError
from compat.core.tree import EngineTree, SourceInfo, find_package_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from compat.core.interpreter import Interpreter
    from compat.sources.installed import InstalledEngine

__all__ = ["EngineSpec", "parse_engine_spec", "open_tree", "open_path", "find_installed"]

_PLAIN_PIN = re.compile(r"^==\s*\d+(?:\.\d+)*$")
_SPEC = re.compile(r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_.-]*)\s*(?:@\s*(?P<at>\S+)|(?P<spec>[=<>!~].*))?\s*$")


@dataclass(frozen=True)
class EngineSpec:
    engine: str  # vllm | sglang
    specifier: str | None  # None: the installed one; "latest"; or a PEP 440 specifier like "==0.11.0"

    @property
    def released(self) -> bool:
        return self.specifier is not None


def parse_engine_spec(text: str) -> EngineSpec:
    """`vllm` | `vllm==0.11.0` | `sglang>=0.5,<0.6` | `vllm==latest` | `vllm@latest`."""
    m = _SPEC.match(text or "")
    name = m and m.group("name").lower()
    if not m or not name or engines.find(name) is None:
        raise UsageError(
            f"--engine {text!r}: expected {engines.choices_text()}, optionally with a version",
            hint="e.g. --engine vllm (installed), --engine vllm==0.11.0, --engine 'sglang>=0.5.8', --engine vllm==latest",
        )
    spec = m.group("at") or m.group("spec")
    if spec:
        spec = spec.strip()
        if spec.lstrip("=").strip().lower() == "latest":
            spec = "latest"
        elif not _PLAIN_PIN.match(spec):  # `==0.11.0` is a specifier by construction: no packaging needed
            from packaging.specifiers import InvalidSpecifier, SpecifierSet

            try:
                SpecifierSet(spec)
            except InvalidSpecifier:
                raise UsageError(f"--engine {text!r}: {spec!r} is not a version specifier", hint="e.g. ==0.11.0 or '>=0.18,<0.20'") from None
    return EngineSpec(name, spec or None)


def find_installed(python: Interpreter | str | None = None) -> list[InstalledEngine]:
    """Every vLLM/SGLang installed in `python` (default: this interpreter): see installed.py."""
    from compat.sources.installed import find_installed as find

    return find(python)


def open_path(directory: str | Path, engine: str | None = None) -> EngineTree:
    directory = Path(directory).expanduser()
    if directory.exists() and not directory.is_dir():  # not a tree (3), as a folder holding no engine is
        raise SourceError(f"--path {directory}: a file, not a source tree",
                          hint="point --path at a source tree: the folder that holds vllm/ or sglang/")
    if not directory.is_dir():
        from compat.core.errors import UsageError  # a path that names nothing: exit 2, as the exit-code table says

        raise UsageError(f"--path {directory}: no such directory",
                         hint="point --path at a source tree: the folder that holds vllm/ or sglang/")
    try:
        name, root = find_package_root(directory, (engine,) if engine else engines.names())
    except ValueError as err:
        held = " or ".join(f"{name}/" for name in engines.names())
        raise SourceError(str(err), hint=f"point --path at the folder that holds {held} (a checkout or an unpacked release)") from None
    from compat.sources.version import version_from_source

    version = version_from_source(root, name)
    return EngineTree(name, root, version, SourceInfo("path", str(root.resolve())))


def open_tree(
    engine: str | None = None,
    *,
    path: str | Path | None = None,
    python: Interpreter | str | None = None,
    cache_dir: str | Path | None = None,
    offline: bool = False,
    progress: bool = True,
) -> EngineTree:
    """The one entry point: `--engine`/`--path`/`--python` as given on the command line."""
    spec = parse_engine_spec(engine) if engine else None
    if path is not None:
        if spec and spec.released:
            raise UsageError("give either --path or a released --engine version, not both")
        return open_path(path, spec.engine if spec else None)
    if spec is None:
        raise UsageError("name an engine (--engine vllm, --engine vllm==0.11.0) or a source tree (--path DIR)")
    if spec.released:
        if python:
            raise UsageError("--python picks an installed engine; it cannot be combined with a released version")
        from compat.sources.released import fetch_release

        return fetch_release(spec.engine, spec.specifier or "latest", cache_dir=cache_dir, offline=offline, progress=progress)
    from compat.sources.installed import installed_tree

    return installed_tree(spec.engine, python)
