"""Probes: one fact about an engine release per file, read statically from its source.

Each module under `probes/vllm/` and `probes/sglang/` registers one function with
`@probe(...)`. A probe takes an `EngineTree`, never imports the engine, and returns a
JSON-able value whose facts carry `location` strings (`file:line`). When the fact is not
in this release it says so (`{"present": False, ...}`) instead of raising.

The registry fills itself: `all_probes(engine)` imports every module of the engine's
folder, so adding a probe is adding a file (the pyupgrade `_plugins/` pattern).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable

from compat.tree import EngineTree


@dataclass(frozen=True)
class Probe:
    engine: str
    key: str  # the key of this fact in `compat probe --json`
    title: str  # the section heading in the human report
    func: Callable[[EngineTree], Any]
    order: int

    def __call__(self, tree: EngineTree) -> Any:
        return self.func(tree)


_REGISTRY: dict[tuple[str, str], Probe] = {}


def probe(engine: str, key: str, title: str, order: int = 50):
    """Register `func` as the probe for fact `key` of `engine`."""

    def register(func: Callable[[EngineTree], Any]) -> Callable[[EngineTree], Any]:
        if (engine, key) in _REGISTRY:
            raise RuntimeError(f"two probes claim {engine}:{key}: {_REGISTRY[(engine, key)].func} and {func}")
        _REGISTRY[(engine, key)] = Probe(engine, key, title, func, order)
        return func

    return register


_LOADED: set[tuple] = set()  # (engine, *its package __path__) already read: a folder added later is read too


def _load(engine: str) -> None:
    package = importlib.import_module(f"{__name__}.{engine}")
    loaded = (engine, *package.__path__)
    if loaded in _LOADED:
        return
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package.__name__}.{info.name}")
    _LOADED.add(loaded)


def all_probes(engine: str) -> list[Probe]:
    _load(engine)
    return sorted((p for p in _REGISTRY.values() if p.engine == engine), key=lambda p: (p.order, p.key))
