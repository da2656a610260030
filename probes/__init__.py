"""Probes: one fact about an engine release per file, read statically from its source.

Each module under `probes/vllm/` and `probes/sglang/` registers one function with
`@probe(engine, key, title, order=50)`, whose arguments are the fields of `CONTRACT` below. A probe
takes an `EngineTree`, never imports the engine, and returns a JSON-able value whose facts carry
`location` strings (`file:line`). When the fact is not in this release it says so
(`{"present": False, ...}`) instead of raising.

The registry fills itself: `all_probes(engine)` imports every module of the engine's folder not
starting with `_` (compat/core/registry.py), so adding a probe is adding a file (the pyupgrade `_plugins/`
pattern), and its test, tests/probes/test_ENGINE_KEY.py. Modules starting with `_` in an engine's
folder, and the modules at this level (`_ast.py`, `drafter_*.py`), are readers the probes share: never
probes themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from compat import engines
from compat.core.registry import Contract, Field, Folder
from compat.core.tree import EngineTree

# What `@probe(...)` takes, checked when a probe module is imported (the decorator's arguments are its fields).
CONTRACT = Contract("probe", (
    Field("engine", str, doc='"vllm" | "sglang": the folder the probe sits in'),
    Field("key", str, doc="the key of this fact in `compat probe --json`"),
    Field("title", str, doc="the section heading in the human report"),
    Field("order", int, default=50, doc="where the fact is shown (lower first, then by key)"),
))
ProbeFunc = Callable[[EngineTree], Any]


@dataclass(frozen=True)
class Probe:
    engine: str
    key: str  # the key of this fact in `compat probe --json`
    title: str  # the section heading in the human report
    func: ProbeFunc
    order: int

    def __call__(self, tree: EngineTree) -> Any:
        return self.func(tree)


_REGISTRY: dict[tuple[str, str], Probe] = {}


def probe(engine: str, key: str, title: str, order: int = CONTRACT.field("order").default) -> Callable[[ProbeFunc], ProbeFunc]:
    """Register `func` as the probe for fact `key` of `engine` (the fields of CONTRACT, checked)."""

    def register(func: ProbeFunc) -> ProbeFunc:
        CONTRACT.values(f"{func.__module__}.{func.__qualname__}", {"engine": engine, "key": key, "title": title, "order": order})
        if (engine, key) in _REGISTRY:
            raise RuntimeError(f"two probes claim {engine}:{key}: {_REGISTRY[(engine, key)].func} and {func}")
        _REGISTRY[(engine, key)] = Probe(engine, key, title, func, order)
        return func

    return register


_FOLDERS: dict[str, Folder] = {}  # importing a module registers its probe


def all_probes(engine: str) -> list[Probe]:
    """The probes of `engine`, from the folder its unit names (compat/engines/: PROBES; none: no probe)."""
    package = engines.get(engine).probes
    if package is not None:
        folder = _FOLDERS.get(package) or _FOLDERS.setdefault(package, Folder(package))
        folder.rules()
    return sorted((p for p in _REGISTRY.values() if p.engine == engine), key=lambda p: (p.order, p.key))
