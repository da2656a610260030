"""Drafter layouts of the methods beyond EAGLE-3: one trainer's checkpoint format per file.

A block or parallel drafter (DFlash, DSpark, P-EAGLE) keeps its tensors as its trainer wrote them: the engines load
them by those names, so a conversion copies them byte for byte and rewrites only config.json (the ids where the
release reads them, the block layout key), with compat's record beside it (compat/convert/blocks.py). What a layout
file declares (CONTRACT, checked on import):

- `NAME`, `DESCRIPTION`, `FAMILY` (a compat.methods family), `TRAINER` (an id of compat.methods.TRAINERS),
  `SOURCE` (where the trainer's code writes the format: repository, file, line), `PRIORITY` (the more specific wins);
- `detect(config, tensor_names) -> bool`.

The MTP heads layout says which layer or module of a target checkpoint holds them (`heads`).
"""

from __future__ import annotations

from types import ModuleType

from compat.core.registry import FUNCTION, Contract, Field, Folder

CONTRACT = Contract("block drafter layout", (
    Field("NAME", str, doc="the layout's name (in the conversion record)"),
    Field("DESCRIPTION", str, doc="one line"),
    Field("FAMILY", str, doc="the compat.methods family its drafters are for"),
    Field("TRAINER", str, doc="the trainer that writes it (compat.methods.TRAINERS)"),
    Field("SOURCE", str, doc="where the trainer's code writes it"),
    Field("PRIORITY", int, doc="which wins when several detect a checkpoint (the more specific: higher)"),
    Field("detect", FUNCTION, doc="detect(config, tensor_names) -> bool"),
), key="NAME")
FOLDER = Folder(__name__, CONTRACT)


def block_layouts() -> list[ModuleType]:
    return [rule.module for rule in FOLDER.rules()]


def detect_block_layout(config: dict, tensor_names: set[str]) -> ModuleType | None:
    """The most specific layout that recognises the checkpoint (None: none does)."""
    found = [m for m in block_layouts() if m.detect(config, tensor_names)]
    return max(found, key=lambda m: m.PRIORITY) if found else None
