"""Is this folder a target model or a drafter? Read from its config.json and file names only, to name a swap.

Two positional models are easy to give in the wrong order (`compat doctor DRAFTER TARGET`, `compat convert ckpt TARGET
... --target DRAFTER`). A drafter holds weights and declares a speculative head (an EAGLE/draft architecture, or a
speculators / eagle config) with one or two layers; a target declares a deep model, and compat only needs its config.
"""

from __future__ import annotations

import json
from pathlib import Path

WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
DRAFTER_MARKS = ("eagle", "draft", "speculator", "mtp")  # in an architecture's name, lower-cased


MAX_CONFIG_BYTES = 1 << 20  # a guess only: a config.json that is not a small regular file is left to the readers


def _config(path: Path) -> dict | None:
    import os
    import stat

    file = (path if path.is_dir() else path.parent) / "config.json"
    try:
        info = os.lstat(file)  # never follow a link (to /dev/zero, a FIFO): the real readers refuse those, with reasons
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CONFIG_BYTES:
            return None
        config = json.loads(file.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    return config if isinstance(config, dict) else None


def looks_like_drafter(path: str | Path) -> bool:
    folder = Path(path)
    config = _config(folder)
    if config is None or not folder.is_dir() or not any((folder / name).exists() for name in WEIGHTS):
        return False
    names = " ".join(str(a) for a in config.get("architectures") or []).lower()
    return (any(mark in names for mark in DRAFTER_MARKS) or "speculators_config" in config or "eagle_config" in config
            or "speculators_model_type" in config)


def looks_like_target(path: str | Path) -> bool:
    config = _config(Path(path))
    if config is None or looks_like_drafter(path):
        return False
    text = config.get("text_config")
    layers = config.get("num_hidden_layers") or (text.get("num_hidden_layers") if isinstance(text, dict) else None)
    return isinstance(layers, int) and layers > 2


def swapped(target: str | Path | None, drafter: str | Path | None) -> bool:
    """True when what was given as the target is a drafter and what was given as the drafter a target."""
    return bool(target and drafter and looks_like_drafter(target) and looks_like_target(drafter))


def holds_weights(path: str | Path) -> bool:
    folder = Path(path)
    return folder.is_dir() and any((folder / name).exists() for name in WEIGHTS)


def wrong_kind(target: str | Path | None, drafter: str | Path | None) -> str | None:
    """What is wrong with the pair when one model is plainly the other kind (the swap aside): "TARGET" when the
    target is a drafter, "DRAFTER" when the drafter is a target model's config with no weights at all (a draft
    model, a whole small LM, holds weights and is left to the readers); None otherwise."""
    if target and looks_like_drafter(target):
        return "TARGET"
    if drafter and looks_like_target(drafter) and not holds_weights(drafter):
        return "DRAFTER"
    return None

