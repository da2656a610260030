"""The provenance record a conversion writes into DST (RECORD_FILE); its format is documented in
checkpoints/__init__.py, whose RECORD_SCHEMA names it. Build it here, read it there."""

from __future__ import annotations

from pathlib import Path

from compat import __version__
from compat.checkpoints import RECORD_SCHEMA
from compat.safetensors_stream import WrittenTensor

from .plan import Plan


def build_record(plan: Plan, written: list[WrittenTensor] | None = None) -> dict:
    """The record `execute(plan)` writes; without `written` (a plan only: doctor's preview of a
    conversion) the same, with no checksums."""
    by_dest = {t.dest_name: t for t in plan.tensors if t.dest_name}
    names = [t.name for t in written] if written is not None else list(by_dest)
    digests = {t.name: t.digest for t in written or [] if t.digest}
    target = plan.target
    return {
        "schema": RECORD_SCHEMA,
        "tool": "compat convert ckpt",
        "compat_version": __version__,
        "layout": plan.dest_layout,
        "engine": plan.engine,
        "engine_version": plan.engine_version,
        "target_family": target.family if target else plan.drafter.target_family,
        "target": None if target is None else {
            "path": str(Path(target.path).absolute()), "model_type": target.model_type, "architecture": target.architecture,
            "num_hidden_layers": target.num_hidden_layers, "hidden_size": target.hidden_size, "vocab_size": target.vocab_size,
        },
        "source": {"path": str(plan.src), "layout": plan.source_layout, "format": plan.source_kind, "trainer": plan.trainer},
        "layer_ids": plan.layer_ids,
        "notes": plan.notes,
        # fields of the layouts this drafter has been in that the written config cannot hold (speculators'
        # proposal methods, auto_map, ...): converting back to such a layout restores them
        "carried": plan.drafter.carried,
        "verified": "byte for byte against the source",
        "checksum": plan.checksum,
        "tensors": {name: {"source": by_dest[name].source_name, "action": by_dest[name].action,
                           **({"checksum": digests[name]} if name in digests else {})} for name in names},
    }
