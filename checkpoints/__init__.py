"""Checkpoint layouts: one drafter layout per file, each data about names and config fields.

A layout module (any module here whose name does not start with `_`) defines:

- `NAME` (the `--from` / `--to` spelling), `DESCRIPTION`, `PRIORITY` (which wins when several
  detectors match: the more specific layout has the higher number);
- `detect(config, tensor_names) -> bool`: does a checkpoint with this config.json and these
  tensor names use this layout (speculators' `is_supported` registry pattern);
- `to_canonical(name) -> str | None` and `from_canonical(name, drafter, ctx) -> str | None`: the
  tensor rename map, both ways (`None`: not a tensor of this layout / dropped on write);
- `read_config(config, ctx) -> DrafterConfig` and `write_config(drafter, ctx) -> dict`, the
  latter parametrised by the engine release where that release matters, with the version gates
  as named constants at the top of the file.

The registry fills itself: `all_layouts()` imports every module of this package, so adding a
layout is adding a file (the pyupgrade `_plugins/` pattern). Shared vocabulary (canonical tensor
names, the canonical config, layer-id conventions) lives in `_canonical.py`.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

# The shared vocabulary, public: other parts import it from here, never from the private module.
from ._canonical import (  # noqa: F401
    CAPTURE_BEFORE, CONVENTIONS, LLAMA_LAYER0, MLA_LAYER0, OUTPUT_OF, RECORD_FILE, RECORD_KEY, REQUIRED_TOP,
    DrafterConfig, LayerIds, ReadContext, TargetInfo, WriteContext, declared_ids, default_layer_ids, ids_from_declared,
    layer_index,
)
from ._conventions import FINGERPRINTS, Settled, settle_convention  # noqa: F401

_REQUIRED = ("NAME", "DESCRIPTION", "PRIORITY", "detect", "to_canonical", "from_canonical", "read_config", "write_config")
_LAYOUTS: dict[str, ModuleType] = {}


def _load() -> None:
    if _LAYOUTS:
        return
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        missing = [attr for attr in _REQUIRED if not hasattr(module, attr)]
        if missing:
            raise RuntimeError(f"checkpoint layout {module.__name__} lacks {', '.join(missing)}")
        if module.NAME in _LAYOUTS:
            raise RuntimeError(f"two checkpoint layouts claim {module.NAME!r}: {_LAYOUTS[module.NAME].__name__} and {module.__name__}")
        _LAYOUTS[module.NAME] = module


def all_layouts() -> dict[str, ModuleType]:
    _load()
    return dict(sorted(_LAYOUTS.items()))


def get_layout(name: str) -> ModuleType:
    _load()
    return _LAYOUTS[name]


def detect_layout(config: dict, tensor_names: set[str]) -> list[ModuleType]:
    """Every layout whose detector accepts the checkpoint, most specific first."""
    _load()
    matches = [layout for layout in _LAYOUTS.values() if layout.detect(config, tensor_names)]
    return sorted(matches, key=lambda layout: -layout.PRIORITY)
