"""The doctor's inputs: the target's config.json and the drafter's config + tensor headers.

Only configs, safetensors headers and the two small vocab maps are read (never the weights), through
the same readers `compat convert ckpt` uses (compat/target.py, compat/convert), so doctor and
convert see one target and one drafter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat.errors import CompatError, UsageError
from compat.target import Target, read_target  # noqa: F401  (the one target reader, re-exported for doctor)


@dataclass
class Drafter:
    path: Path
    config: dict
    tensors: dict[str, tuple[str, tuple[int, ...]]]  # name -> (dtype, shape), from the headers only
    maps: dict = field(default_factory=dict)  # "d2t" / "t2d" -> a tensor whose .read() gives its bytes (small)
    layout: Any = None  # the checkpoints/ layout module that recognises it
    trained_ids: list[int] | None = None  # capture-before ids it was trained on (None: unknown)
    trained_origin: str = ""
    read_error: str | None = None  # the layout could not read the config (e.g. ambiguous ids)
    # When nothing settles the convention of the declared ids: what each reading says it was trained on.
    branches: dict[str, list[int]] | None = None
    settled_by: str | None = None  # "record" | "flag" | "fingerprint" | "structure" | "default" | None
    convention: str | None = None  # the convention the declared ids were read in, when settled by flag or fingerprint

    @property
    def architecture(self) -> str | None:
        archs = self.config.get("architectures") or []
        return archs[0] if archs else None


def read_drafter(path: str | Path, target: Target | None, convention: str | None = None) -> Drafter:
    from compat.convert import open_source

    path = Path(path).expanduser()
    if not path.is_dir():
        raise UsageError(f"drafter {path} is not a directory", hint="pass the drafter directory (config.json + weights)")
    source = open_source(path)  # config.json + safetensors headers; tensor bytes are never read here
    tensors = {name: (t.dtype, tuple(t.shape)) for name, t in source.tensors.items()}
    maps = {canonical: source.tensors[name] for name in source.tensors
            if (canonical := _map_name(name)) is not None}
    return recognise(Drafter(path, dict(source.config), tensors, maps=maps), target, convention)


def _map_name(name: str) -> str | None:
    from compat.checkpoints import canonical_name

    canonical = canonical_name(name)
    return canonical if canonical in ("d2t", "t2d") else None


def recognise(drafter: Drafter, target: Target | None, convention: str | None = None) -> Drafter:
    """Find the drafter's layout and the layers it was trained on (capture-before), saying how they are known.

    In order: compat's record (the physical layers), the user's `convention`, an unambiguous trainer
    fingerprint (checkpoints/_conventions.py), the layout's own rule (both fields agreeing, the EAGLE
    trainers' nested ids); when none settles it, `branches` holds what each reading trains on."""
    from compat.checkpoints import CONVENTIONS, AmbiguousConvention, detect_layout, settle_convention

    layouts = detect_layout(drafter.config, set(drafter.tensors))
    drafter.layout = layouts[0] if layouts else None
    if drafter.layout is None:
        drafter.read_error = "no known drafter layout (no midlayer.* / layers.0.* tensors, no speculators config)"
        return drafter
    settled = settle_convention(drafter.config, set(drafter.tensors), convention)
    if settled is not None and settled.capture_before is not None:
        drafter.trained_ids, drafter.trained_origin, drafter.settled_by = settled.capture_before, settled.why, settled.source
        return drafter
    try:
        ids, origin = _trained(drafter, target, settled.convention if settled else None, with_origin=True)
    except AmbiguousConvention as err:
        branches = {conv: _trained(drafter, target, conv) for conv in CONVENTIONS}
        if all(isinstance(ids, list) for ids in branches.values()):
            drafter.branches = branches
        drafter.read_error = ("no compat record, no --layer-ids-convention, no trainer fingerprint: "
                              + str(err.message).split(": ", 1)[-1].split(". capture-before")[0])
        return drafter
    except CompatError as err:
        drafter.read_error = str(err).split("\n")[0]
        return drafter
    drafter.settled_by = settled.source if settled else "layout"
    drafter.convention = settled.convention if settled else None
    if ids is not None:
        drafter.trained_ids = ids
        drafter.trained_origin = origin + (f"; {settled.why}" if settled and settled.source == "fingerprint" else "")
    elif target is not None and target.num_hidden_layers:
        from compat.checkpoints import default_layer_ids

        drafter.settled_by = "default"
        drafter.trained_ids = default_layer_ids(target.num_hidden_layers)
        drafter.trained_origin = "not declared: trained on the default (2, n//2, n-3)"
    return drafter


def _trained(drafter: Drafter, target: Target | None, convention: str | None, *, with_origin: bool = False):
    """The capture-before ids the layout reads under `convention` (None: the layout's own rules)."""
    from compat.checkpoints import ReadContext

    try:
        canonical = drafter.layout.read_config(drafter.config, ReadContext(convention, target))
    except CompatError:
        if with_origin:
            raise
        return None
    ids = canonical.layer_ids.capture_before
    ids = list(ids) if ids is not None else None
    return (ids, canonical.layer_ids.origin) if with_origin else ids

