"""The doctor's inputs: the target's config.json and the drafter's config + tensor headers.

Only configs, safetensors headers and the two small vocab maps are read (never the weights), through
the same readers `compat convert ckpt` uses (compat/target.py, compat/convert), so doctor and
convert see one target and one drafter; how the drafter's layer ids are known is settled once, by
checkpoints.settle, and carried on the drafter (doctor's fixes hand it to convert as is).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from compat.checkpoints import CONVENTION_FLAG, AmbiguousConvention, Settled
from compat.errors import CompatError, UsageError
from compat.target import Target, read_target  # noqa: F401  (the one target reader, re-exported for doctor)
from compat.vocab_maps import MapTensor


@dataclass
class Drafter:
    path: Path
    config: dict
    tensors: dict[str, tuple[str, tuple[int, ...]]]  # name -> (dtype, shape), from the headers only
    maps: dict[str, MapTensor] = field(default_factory=dict)  # "d2t" / "t2d" -> a tensor whose .read() gives its bytes (small)
    layout: ModuleType | None = None  # the checkpoints/ layout module that recognises it
    settled: Settled | None = None  # how its layer ids are known (None: they are not: see read_error)
    read_error: str | None = None  # why the layout could not read the config (e.g. ambiguous ids), in words
    # When only the user can settle the convention of the declared ids: the error, with what each reading trains on.
    ambiguous: AmbiguousConvention | None = None

    @property
    def architecture(self) -> str | None:
        archs = self.config.get("architectures") or []
        return archs[0] if archs else None

    @property
    def trained_ids(self) -> list[int] | None:
        """The capture-before layers it was trained on (None: unknown)."""
        return self.settled.capture_before if self.settled is not None else None

    @property
    def settled_by(self) -> str | None:
        return self.settled.source if self.settled is not None else None

    @property
    def convention(self) -> str | None:
        """The convention its declared ids are read in, when the user told it or a fingerprint fixes it."""
        return self.settled.convention if self.settled is not None else None

    @property
    def branches(self) -> dict[str, list[int]] | None:
        """When nothing settles the convention: what each reading says it was trained on."""
        return self.ambiguous.readings if self.ambiguous is not None else None

    @property
    def trained_origin(self) -> str:
        """How the layers trained on are known, in words."""
        settled = self.settled
        if settled is None or settled.capture_before is None:
            return ""
        ids = settled.ids
        if ids is None:  # compat's record, or the default
            return settled.why
        if settled.source == "fingerprint":
            # doctor's words for a fingerprint name the flag the fingerprint stands in for (kept as they were)
            return f"{ids.declared_field} = {ids.declared} read as {ids.convention} ({CONVENTION_FLAG}); {settled.why}"
        return ids.origin


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
    """Find the drafter's layout and settle how its layer ids are known (checkpoints.settle: compat's
    record, the user's `convention`, a trainer fingerprint, the layout's own rule, the default); when
    nothing settles them, `ambiguous` holds what each reading trains on."""
    from compat.checkpoints import detect_layout, settle

    layouts = detect_layout(drafter.config, set(drafter.tensors))
    drafter.layout = layouts[0] if layouts else None
    if drafter.layout is None:
        drafter.read_error = "no known drafter layout (no midlayer.* / layers.0.* tensors, no speculators config)"
        return drafter
    try:
        drafter.settled = settle(drafter.layout, drafter.config, set(drafter.tensors), flag=convention, target=target)
    except AmbiguousConvention as err:
        drafter.ambiguous = err
        drafter.read_error = f"no compat record, no {CONVENTION_FLAG}, no trainer fingerprint: {err.why}"
    except CompatError as err:
        drafter.read_error = err.message
    return drafter
