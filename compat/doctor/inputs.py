"""The doctor's inputs: the target's config.json and the drafter's config + tensor headers.

Only configs, safetensors headers and the two small vocab maps are read (never the weights), through
the same readers `compat convert ckpt` uses (compat/target.py, compat/convert), so doctor and
convert see one target and one drafter; how the drafter's layer ids are known is settled once, by
checkpoints.settle, and carried on the drafter (doctor's fixes hand it to convert as is). The Drafter
type is the checks' (compat.checks: what they read).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from compat.checkpoints import CONVENTION_FLAG, AmbiguousConvention
from compat.checks import Drafter, served_model
from compat.core.errors import CompatError, RefusedError, UsageError
from compat.core.tree import EngineTree
from compat.launch_line import LaunchLine
from compat.target import Target, read_target  # noqa: F401  (the one target reader, re-exported for doctor)


def read_drafter(path: str | Path, target: Target | None, convention: str | None = None,
                 layer_ids: list[int] | None = None) -> Drafter:
    from compat.convert import open_source

    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():  # there, but the wrong kind: 4; nothing there: 2
        raise RefusedError(f"drafter {path}: a file, not a drafter directory",
                           hint="pass the drafter directory (config.json + weights)")
    if not path.is_dir():
        raise UsageError(f"drafter {path}: no such directory", hint="pass the drafter directory (config.json + weights)")
    source = open_source(path)  # config.json + safetensors headers; tensor bytes are never read here
    tensors = {name: (t.dtype, tuple(t.shape)) for name, t in source.tensors.items()}
    maps = {canonical: source.tensors[name] for name in source.tensors
            if (canonical := _map_name(name)) is not None}
    return recognise(Drafter(path, dict(source.config), tensors, maps=maps), target, convention, layer_ids)


def _map_name(name: str) -> str | None:
    from compat.checkpoints import canonical_name

    canonical = canonical_name(name)
    return canonical if canonical in ("d2t", "t2d") else None


def recognise(drafter: Drafter, target: Target | None, convention: str | None = None,
              layer_ids: list[int] | None = None) -> Drafter:
    """Find the drafter's layout and settle how its layer ids are known (checkpoints.settle: compat's
    record, the user's `layer_ids` or `convention`, a trainer fingerprint, the layout's own rule, nothing
    declared); when nothing settles the convention, `ambiguous` holds what each reading trains on."""
    from compat.checkpoints import detect_layout, settle
    from compat.methods import recognise_drafter

    drafter.recognised = recognise_drafter(drafter.config, drafter.tensors)
    layouts = detect_layout(drafter.config, set(drafter.tensors))
    drafter.layout = layouts[0] if layouts else None
    if drafter.layout is None:
        drafter.read_error = "no known drafter layout (no midlayer.* / layers.0.* tensors, no speculators config)"
        return drafter
    try:
        drafter.settled = settle(drafter.layout, drafter.config, set(drafter.tensors), flag=convention, target=target,
                                 layer_ids=layer_ids)
    except AmbiguousConvention as err:
        drafter.ambiguous = err
        drafter.read_error = f"no compat record, no {CONVENTION_FLAG}, no trainer fingerprint: {err.why}"
    except CompatError as err:
        drafter.read_error = err.message
    return drafter


def no_drafter(target: Target) -> Drafter:
    """The drafter of a method that takes none (n-gram, suffix, UNO; MTP heads, which the target ships): nothing to
    read. Its path is the target's, which an MTP launch names as the draft model."""
    return Drafter(target.path if target.path.is_dir() else target.path.parent, {}, {}, present=False,
                   read_error="the method takes no drafter")


def with_served_model(line: LaunchLine, tree: EngineTree) -> LaunchLine:
    """The line with its model read as this release's parser reads it, when its words alone do not say which word
    it is (`vllm serve --trust-remote-code MODEL`: whether the word after an option is its value is the release's)."""
    if line.target is not None:
        return line
    from compat.report import build_report

    fact = build_report(tree).get("cli_arguments")
    model = served_model(line, fact) if isinstance(fact, dict) and fact.get("present") else None
    return replace(line, target=model) if model else line
