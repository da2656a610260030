"""A good EAGLE-3 drafter broken one part at a time, each the way a drafter really goes wrong: a file missing or
cut, a config key that does not fit the target or the tensors, a tensor renamed, dropped or of another shape. Written
from the drafter the product's builder made (tests/engine/tiny_models.py); the engine's reaction is what the tests
record, nothing about it is written here."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from safetensors.numpy import load_file, save_file

WEIGHTS = "model.safetensors"


def _config(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(where: Path) -> None:
        config = json.loads((where / "config.json").read_text())
        edit(config)
        (where / "config.json").write_text(json.dumps(config))
    return apply


def _tensors(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(where: Path) -> None:
        tensors = load_file(str(where / WEIGHTS))
        edit(tensors)
        save_file(tensors, str(where / WEIGHTS), metadata={"format": "pt"})
    return apply


def _rename(tensors: dict) -> None:
    tensors["fc_in.weight"] = tensors.pop("fc.weight")


def _cut_vocab(tensors: dict) -> None:
    tensors["lm_head.weight"] = tensors["lm_head.weight"][:200]


BREAKAGES: dict[str, Callable[[Path], None]] = {
    "no-weights": lambda where: (where / WEIGHTS).unlink(),
    "no-config": lambda where: (where / "config.json").unlink(),
    "config-cut-short": lambda where: (where / "config.json").write_text((where / "config.json").read_text()[:100]),
    "unknown-architecture": _config(lambda c: c.update(architectures=["Eagle3NoSuchForCausalLM"])),
    "fc-width": _config(lambda c: c.update(eagle_aux_hidden_state_layer_ids=c["eagle_aux_hidden_state_layer_ids"][::2])),
    "hidden-size": _config(lambda c: c.update(hidden_size=64)),
    "two-layers-one-in-weights": _config(lambda c: c.update(num_hidden_layers=2)),
    "draft-vocab": _config(lambda c: c.update(draft_vocab_size=300)),
    "renamed-tensor": _tensors(_rename),
    "missing-tensor": _tensors(lambda t: t.pop("layers.0.self_attn.o_proj.weight")),
    "lm-head-shape": _tensors(_cut_vocab),
}


def write_broken(good: Path, where: Path, name: str) -> Path:
    shutil.copytree(good, where)
    BREAKAGES[name](where)
    return where
