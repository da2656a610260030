"""The doctor's inputs: the target's config.json and the drafter's config + tensor headers.

Only configs and safetensors headers are read (never tensor bytes), through the same readers
`compat convert ckpt` uses, so doctor and convert see one drafter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compat.errors import CompatError, RefusedError, UsageError


@dataclass
class Target:
    path: Path  # the model directory (what the engine is given)
    config: dict
    model_type: str | None  # the text model's: what vLLM's whitelist tests (hf_text_config.model_type)
    top_model_type: str | None
    architecture: str | None  # architectures[0]: the class the engine instantiates
    num_layers: int | None
    vocab_size: int | None
    hidden_size: int | None

    @property
    def names(self) -> list[str]:
        return [n for n in (self.model_type, self.top_model_type, self.architecture) if n]

    @property
    def needs_remote_code(self) -> bool:
        return bool(self.config.get("auto_map"))


def read_target(path: str | Path) -> Target:
    path = Path(path).expanduser()
    config_path = path / "config.json" if path.is_dir() else path
    if not config_path.is_file():
        raise UsageError(f"target {path}: no config.json there", hint="pass the target model directory or its config.json")
    config = _read_json(config_path, "target")
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}  # Kimi-K2.5 wraps its LM

    def pick(key):
        value = text.get(key) if text.get(key) is not None else config.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    architectures = config.get("architectures") or text.get("architectures") or []
    return Target(
        path=config_path.parent, config=config,
        model_type=text.get("model_type") or config.get("model_type"), top_model_type=config.get("model_type"),
        architecture=architectures[0] if architectures else None,
        num_layers=pick("num_hidden_layers"), vocab_size=pick("vocab_size"), hidden_size=pick("hidden_size"),
    )


@dataclass
class Drafter:
    path: Path
    config: dict
    tensors: dict[str, tuple[str, tuple[int, ...]]]  # name -> (dtype, shape), from the headers only
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
    source = open_source(path)  # config.json + safetensors headers; tensor bytes are never read
    tensors = {name: (t.dtype, tuple(t.shape)) for name, t in source.tensors.items()}
    return recognise(Drafter(path, dict(source.config), tensors), target, convention)


def recognise(drafter: Drafter, target: Target | None, convention: str | None = None) -> Drafter:
    """Find the drafter's layout and the layers it was trained on (capture-before), saying how they are known.

    The convention of declared ids is settled by compat's record, the user's `convention`, or a trainer
    fingerprint (checkpoints/_conventions.py); when none settles it, `branches` holds both readings."""
    from compat.checkpoints import CONVENTIONS, declared_ids, detect_layout, settle_convention

    layouts = detect_layout(drafter.config, set(drafter.tensors))
    drafter.layout = layouts[0] if layouts else None
    if drafter.layout is None:
        drafter.read_error = "no known drafter layout (no midlayer.* / layers.0.* tensors, no speculators config)"
        return drafter
    settled = settle_convention(drafter.config, set(drafter.tensors), convention)
    if settled is not None and settled.capture_before is not None:
        drafter.trained_ids, drafter.trained_origin, drafter.settled_by = settled.capture_before, settled.why, settled.source
        return drafter
    top, nested = declared_ids(drafter.config)
    if settled is None and (top is not None or nested is not None) and not _consistent(top, nested):
        branches = {conv: _trained(drafter, target, conv) for conv in CONVENTIONS}
        if all(isinstance(ids, list) for ids in branches.values()):
            drafter.branches = branches
        drafter.read_error = "no compat record, no --layer-ids-convention, no trainer fingerprint"
        return drafter
    try:
        ids, origin = _trained(drafter, target, settled.convention if settled else None, with_origin=True)
    except CompatError as err:
        drafter.read_error = str(err).split("\n")[0]
        return drafter
    drafter.settled_by = settled.source if settled else ("structure" if top is not None and nested is not None else "default")
    drafter.convention = settled.convention if settled else None
    if ids is not None:
        drafter.trained_ids = ids
        drafter.trained_origin = origin + (f"; {settled.why}" if settled and settled.source == "fingerprint" else "")
    elif target is not None and target.num_layers:
        from compat.checkpoints import default_layer_ids

        drafter.trained_ids = default_layer_ids(target.num_layers)
        drafter.trained_origin = "not declared: trained on the default (2, n//2, n-3)"
    return drafter


def _consistent(top, nested) -> bool:
    """Both fields present and naming the same layers as top = nested + 1 (what `--to eagle` writes for
    both engines): only the reading top capture-before / nested output-of makes them agree."""
    ok = all(isinstance(v, list) and v and all(isinstance(i, int) for i in v) for v in (top, nested))
    return ok and len(top) == len(nested) and all(t == n + 1 for t, n in zip(top, nested))


def _trained(drafter: Drafter, target: Target | None, convention: str | None, *, with_origin: bool = False):
    """The capture-before ids the layout reads under `convention` (None: the layout's own rules)."""
    from compat.checkpoints import ReadContext, TargetInfo

    info = None
    if target is not None:
        info = TargetInfo(str(target.path), target.hidden_size, target.vocab_size, target.num_layers,
                          target.model_type, [a for a in [target.architecture] if a])
    try:
        canonical = drafter.layout.read_config(drafter.config, ReadContext(convention, info))
    except CompatError:
        if with_origin:
            raise
        return None
    ids = canonical.layer_ids.capture_before
    ids = list(ids) if ids is not None else None
    return (ids, canonical.layer_ids.origin) if with_origin else ids


def _read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RefusedError(f"{what} {path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise RefusedError(f"{what} {path}: not a JSON object")
    return data
