"""Checkpoint layouts: one drafter layout per file, each data about names and config fields.

A layout module (any module here whose name does not start with `_`) defines the fields of `CONTRACT`
below (checked when it is imported):

- `NAME` (the `--from` / `--to` spelling), `DESCRIPTION`, `PRIORITY` (which wins when several
  detectors match: the more specific layout has the higher number);
- `detect(config, tensor_names) -> bool`: does a checkpoint with this config.json and these
  tensor names use this layout (speculators' `is_supported` registry pattern);
- `trainer(config) -> str`: the trainer the layout implies, an id of `TRAINERS`;
- `to_canonical(name) -> str | None` and `from_canonical(name, drafter, ctx) -> str | None`: the
  tensor rename map, both ways (`None`: not a tensor of this layout / dropped on write);
- `read_config(config, ctx) -> DrafterConfig` and `write_config(drafter, ctx) -> dict`, the
  latter parametrised by the engine release where that release matters, with the version gates
  as named constants at the top of the file.

The registry fills itself: `all_layouts()` imports every module of this package (compat/core/registry.py),
so adding a layout is adding a file (the pyupgrade `_plugins/` pattern), and its tests in
tests/checkpoints/ (test_layouts.py holds the registry's and every layout's rules). This module is the public face of the
package: the shared vocabulary below (canonical tensor names, the canonical config, layer-id
conventions, the provenance record) is imported from `compat.checkpoints`, never from `_canonical`.

The provenance record
---------------------
Every conversion writes `RECORD_FILE` (compat_convert.json) beside config.json; engines ignore it,
and `compat convert` and `compat doctor` read it (attached to the config under `RECORD_KEY`) to know
what a drafter is. Its keys are stable within a schema (`RECORD_SCHEMA`, "compat.convert-record/1");
a key that changes meaning bumps the schema:

    {
      "schema": "compat.convert-record/1",
      "tool": "compat convert ckpt",
      "compat_version": "0.1.0",
      "layout": "sglang",                 # the layout written (a NAME above)
      "engine": "sglang",                 # "vllm" | "sglang" | null (a layout for every engine)
      "engine_version": "0.5.16",         # the release it was written for, or null (every known release)
      "target_family": "deepseek",        # "llama" | "deepseek" | null: the family of the target it was written for
      "target": {"path": "/m/Kimi-K2.5", "model_type": "kimi_k2", "architecture": "KimiK25ForConditionalGeneration",
                 "num_hidden_layers": 61, "hidden_size": 7168, "vocab_size": 163840},   # or null (no --target)
      "source": {
        "path": "/d/kimi-eagle3", "layout": "eagle",
        "format": "safetensors",          # | "sharded safetensors" | "pytorch_model.bin"
        "trainer": {"id": "specforge-angelslim-eagle", "description": "...",
                    "from": "layout"}     # "layout": implied by the source layout; "record": from SRC's own record
      },
      "layer_ids": {
        "capture_before": [3, 31, 59],    # THE PHYSICAL LAYERS trained on: the residual stream entering
                                          # these target layers (HF hidden_states[i]); null: the engine default
        "basis": "layout-default",        # why: one of BASES ("flag" --layer-ids-convention, "layout-default"
                                          # the source layout's rule, "command-line" --layer-ids, "engine-default"
                                          # (2, n//2, n-3) of --target, "undeclared"); an ambiguous source is
                                          # refused, so no record says "ambiguous"
        "from_record": false,             # true: SRC was itself converted by compat and its record agreed
        "declared": [2, 30, 58],          # what the source declared (null: nothing)
        "declared_field": "eagle_config.eagle_aux_hidden_state_layer_ids",   # or the top-level field, or "--layer-ids"
        "declared_convention": "output-of",   # what `declared` was read as: "capture-before" | "output-of" | null
        "origin": "... the same in words ...",
        "written": {"eagle_config.eagle_aux_hidden_state_layer_ids": [3, 31, 59]}  # what config.json now says
      },
      "notes": ["..."],
      "carried": {"speculators": {"speculators_config": {...}, "auto_map": {...}}},   # per layout, its fields no
                                          # canonical field holds; a conversion back to that layout restores them
      "verified": "byte for byte against the source",
      "checksum": "none",                 # | "crc32" | "sha256"
      "tensors": {"fc.weight": {"source": "fc.weight", "action": "copy", "checksum": "..."}}  # checksum only if asked
    }
"""

from __future__ import annotations

from types import ModuleType

from compat.core.registry import FUNCTION, Contract, Field, Folder

from ._canonical import (  # the shared vocabulary, re-exported: import these from compat.checkpoints
    BASES, BASIS_COMMAND_LINE, BASIS_ENGINE_DEFAULT, BASIS_FLAG, BASIS_LAYOUT, BASIS_UNDECLARED, CAPTURE_BEFORE,
    CONVENTIONS, LLAMA_LAYER0, MLA_LAYER0, NESTED_IDS, OUTPUT_OF, RECORD_FILE, RECORD_KEY, RECORD_SCHEMA, REQUIRED_TOP,
    TOP_IDS, TRAINERS, DrafterConfig, LayerIds, ReadContext, TargetInfo, WriteContext, canonical_name, compat_record,
    AmbiguousConvention, BASIS_FINGERPRINT, declared_ids, default_layer_ids, ids_from_declared, layer_index, record, recorded_layout, strip_model_prefix,
    target_family, CONVENTION_FLAG, ConflictingLayerIds, ConventionNeeded, Settled, SettledSource,
)
from ._conventions import FINGERPRINTS, LAYER_IDS_FLAG, add_flag, add_layer_ids_flag, from_flag, layer_ids_arg, settle, told_layers

__all__ = [
    "BASES", "BASIS_COMMAND_LINE", "BASIS_ENGINE_DEFAULT", "BASIS_FLAG", "BASIS_LAYOUT", "BASIS_UNDECLARED", "CAPTURE_BEFORE",
    "CONVENTIONS", "LLAMA_LAYER0", "MLA_LAYER0", "NESTED_IDS", "OUTPUT_OF", "RECORD_FILE", "RECORD_KEY", "RECORD_SCHEMA",
    "REQUIRED_TOP", "TOP_IDS", "TRAINERS", "DrafterConfig", "LayerIds", "ReadContext", "TargetInfo", "WriteContext",
    "canonical_name", "compat_record", "default_layer_ids", "ids_from_declared", "layer_index", "record", "recorded_layout",
    "strip_model_prefix", "target_family", "all_layouts", "get_layout", "detect_layout",
    "declared_ids", "FINGERPRINTS", "Settled", "SettledSource", "settle", "from_flag", "add_flag", "AmbiguousConvention",
    "ConventionNeeded", "ConflictingLayerIds", "CONVENTION_FLAG", "BASIS_FINGERPRINT", "LAYER_IDS_FLAG",
    "add_layer_ids_flag", "layer_ids_arg", "told_layers",
]

CONTRACT = Contract("checkpoint layout", (
    Field("NAME", str, doc="the --from / --to spelling"),
    Field("DESCRIPTION", str, doc="one line"),
    Field("ENGINE", str, default=None, doc="the engine whose releases it is written for (None: every engine's)"),
    Field("PRIORITY", int, doc="which wins when several detectors match (the more specific layout: higher)"),
    Field("detect", FUNCTION, doc="detect(config, tensor_names) -> bool"),
    Field("trainer", FUNCTION, doc="trainer(config) -> str: an id of TRAINERS"),
    Field("to_canonical", FUNCTION, doc="to_canonical(name) -> str | None"),
    Field("from_canonical", FUNCTION, doc="from_canonical(name, drafter, ctx) -> str | None"),
    Field("read_config", FUNCTION, doc="read_config(config, ctx) -> DrafterConfig"),
    Field("write_config", FUNCTION, doc="write_config(drafter, ctx) -> dict"),
), key="NAME")
FOLDER = Folder(__name__, CONTRACT, subpackages=False)  # blocks/: the block drafters' layouts, a folder of their own


def _layouts() -> dict[str, ModuleType]:
    return {rule["NAME"]: rule.module for rule in FOLDER.rules()}


def all_layouts() -> dict[str, ModuleType]:
    return dict(sorted(_layouts().items()))


def get_layout(name: str) -> ModuleType:
    return _layouts()[name]


def engine_of(name: str) -> str | None:
    """The engine whose releases layout `name` is written for (None: a layout for every engine, or no such layout)."""
    return next((rule["ENGINE"] for rule in FOLDER.rules() if rule["NAME"] == name), None)


def detect_layout(config: dict, tensor_names: set[str]) -> list[ModuleType]:
    """Every layout whose detector accepts the checkpoint, most specific first."""
    matches = [layout for layout in _layouts().values() if layout.detect(config, tensor_names)]
    return sorted(matches, key=lambda layout: -layout.PRIORITY)
