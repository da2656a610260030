"""make_plan: detect the source layout, read the canonical config, translate layer ids, validate
tensors and vocab maps, check the target, write the destination config. Nothing is written to disk."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from packaging.version import InvalidVersion, Version

from compat import checkpoints
from compat.checkpoints import (
    BASIS_COMMAND_LINE, BASIS_ENGINE_DEFAULT, BASIS_LAYOUT, CAPTURE_BEFORE, RECORD_KEY, DrafterConfig, LayerIds,
    ReadContext, Settled, WriteContext, compat_record, default_layer_ids, ids_from_declared, layer_index,
)
from compat.core.errors import RefusedError, UsageError
from compat.core.files import refuse_os_error
from compat.safetensors_stream import CHECKSUM, DTYPE_NAMES, DTYPE_SIZES, FLOAT_DTYPES, CheckpointFormatError, TensorSource, bytes_source, parse_size
from compat.target import Target, read_target

from .checks import check_layers, check_shapes, check_target, check_vocab_maps
from .source import SINGLE_FILE, SourceCheckpoint, extra_files, open_source

DEFAULT_MAX_SHARD = "5GB"  # transformers' save_pretrained default; a Kimi drafter with embed_tokens is ~4.7 GB


@dataclass
class PlannedTensor:
    canonical: str
    source_name: str | None  # None: derived here (d2t from t2d or back)
    dest_name: str | None  # None: dropped (the destination does not load it)
    dtype: str
    out_dtype: str
    shape: tuple[int, ...]
    action: str  # copy | convert | derive | drop
    source: TensorSource | None = None

    @property
    def out_nbytes(self) -> int:
        return math.prod(self.shape) * DTYPE_SIZES[self.out_dtype]


@dataclass
class Plan:
    src: Path
    dst: Path
    source_kind: str
    source_layout: str
    dest_layout: str
    engine: str | None
    engine_version: str | None
    tensors: list[PlannedTensor]
    config_before: dict
    config_after: dict
    drafter: DrafterConfig
    layer_ids: dict
    notes: list[str]
    shards: list[tuple[str, list[PlannedTensor]]]
    extra_files: list[str]
    metadata: dict[str, str]
    force: bool
    target: Target | None = None
    checksum: str = CHECKSUM
    trainer: dict | None = None  # {"id", "description", "from"}: who made the source (the record's source.trainer)
    source_record: dict | None = None  # SRC's own compat record, when it was converted by compat
    source_roots: tuple[Path, ...] = ()
    engine_source: str | None = None  # where engine_version was read (Options.engine_source)

    def config_changes(self) -> dict:
        before, after = self.config_before, self.config_after
        changes = {}
        for key in sorted(set(before) | set(after)):
            if key == RECORD_KEY:
                continue
            if before.get(key, _ABSENT) != after.get(key, _ABSENT):
                changes[key] = {"from": before.get(key, _ABSENT_TEXT), "to": after.get(key, _ABSENT_TEXT)}
        return changes

    def to_json(self) -> dict:
        return {
            "src": str(self.src), "dst": str(self.dst), "source_format": self.source_kind,
            "from": self.source_layout, "to": self.dest_layout,
            "engine": self.engine, "engine_version": self.engine_version, "engine_source": self.engine_source,
            "trainer": self.trainer,
            "tensors": [{"source": t.source_name, "canonical": t.canonical, "dest": t.dest_name, "action": t.action,
                         "dtype": t.dtype, "out_dtype": t.out_dtype, "shape": list(t.shape)} for t in self.tensors],
            "config_changes": self.config_changes(),
            "config": self.config_after,
            "layer_ids": self.layer_ids,
            "shards": [{"file": name, "tensors": len(items), "bytes": sum(t.out_nbytes for t in items)} for name, items in self.shards],
            "extra_files": self.extra_files,
            "notes": self.notes,
        }


_ABSENT = object()
_ABSENT_TEXT = "<absent>"


@dataclass
class Options:
    src: Path
    dst: Path
    to: str
    source_layout: str | None = None
    engine_version: str | None = None  # the release that will load DST (None: every known release)
    target: Path | None = None
    layer_ids: list[int] | None = None
    # How the source's declared ids (and --layer-ids) are read, as the caller settled it: the user's
    # --layer-ids-convention (checkpoints.from_flag), or doctor's settled value for the drafter. None: make_plan
    # settles it from the source (compat's record, a trainer fingerprint, the layout's rule).
    convention: Settled | None = None
    dtype: str | None = None
    max_shard_size: int = parse_size(DEFAULT_MAX_SHARD)
    force: bool = False
    checksum: str = CHECKSUM
    # Where engine_version comes from, as the command line named it (`--engine vllm==0.16.0`: "vllm 0.16.0, a
    # release on the package index"; installed, a --path tree): shown in the plan, kept in its JSON.
    engine_source: str | None = None


def make_plan(opts: Options) -> Plan:
    try:
        return _make_plan(opts)
    except OSError as exc:
        raise refuse_os_error(exc, opts.src, "reading SRC and planning") from None


def _make_plan(opts: Options) -> Plan:
    src, dst = Path(opts.src).resolve(), Path(opts.dst).resolve()
    check_paths(src, dst, opts.force)
    layouts = checkpoints.all_layouts()
    if opts.to not in layouts:
        raise UsageError(f"--to {opts.to}: unknown layout", hint=f"one of {', '.join(layouts)}")
    version = _parse_version(opts.engine_version)
    target = read_target(opts.target) if opts.target else None
    source = open_source(src)
    notes: list[str] = list(source.notes)

    source_layout = _source_layout(source, opts.source_layout)
    canonical = _canonical_names(source, source_layout)
    drafter = _read_drafter(source, source_layout, opts.convention, target)
    if opts.layer_ids is not None:
        told = opts.convention.convention if opts.convention is not None else None
        drafter.layer_ids = ids_from_declared(opts.layer_ids, told or CAPTURE_BEFORE, "--layer-ids",
                                              "given on the command line", BASIS_COMMAND_LINE)
    if drafter.layer_ids.capture_before is None and target and target.num_hidden_layers:
        drafter.layer_ids = LayerIds(default_layer_ids(target.num_hidden_layers),
                                     f"not declared: the engines' default (2, n//2, n-3) for the target's {target.num_hidden_layers} layers",
                                     basis=BASIS_ENGINE_DEFAULT)
    if drafter.target_family is None and target is not None:
        drafter.target_family = target.family
    prior = compat_record(source.config)
    from_record = _inherit_basis(drafter, prior)

    by_canonical = {c: source.tensors[name] for name, c in canonical.items()}
    check_layers(drafter, by_canonical, notes)
    check_shapes(drafter, by_canonical, notes)
    if drafter.vocab_size is None and target is not None and target.vocab_size:
        drafter.vocab_size = target.vocab_size
        notes.append(f"vocab_size: set to the target's {target.vocab_size}")
    derived = {d.name: d for d in check_vocab_maps(drafter, by_canonical, notes,
                                                   identity=getattr(layouts[opts.to], "NEEDS_VOCAB_MAPS", False))}
    if target is not None:
        check_target(drafter, by_canonical, target, notes)

    if opts.dtype:
        _check_cast_available(opts.dtype)
    out_dtype = DTYPE_NAMES[opts.dtype] if opts.dtype else None
    if opts.dtype:
        drafter.torch_dtype = opts.dtype

    dest_layout = layouts[opts.to]
    wctx = WriteContext(version, target)
    config_after = dest_layout.write_config(drafter, wctx)
    if version is not None and checkpoints.engine_of(opts.to) is None:
        wctx.note(f"the release ({version}) does not change the {opts.to} layout (written for every release)")
    extras, extra_notes = extra_files(source)
    notes = wctx.notes + notes + extra_notes

    planned = _planned_tensors(canonical, by_canonical, derived, dest_layout, drafter, wctx, out_dtype)
    dest_names = [t.dest_name for t in planned if t.dest_name]
    if len(dest_names) != len(set(dest_names)):
        raise RefusedError(f"--to {opts.to}: two tensors map to the same name", hint="the source holds the same tensor under two spellings")

    ids = drafter.layer_ids
    layer_ids = {
        "capture_before": ids.capture_before, "basis": ids.basis, "from_record": from_record, "origin": ids.origin,
        "declared": ids.declared, "declared_field": ids.declared_field, "declared_convention": ids.convention,
        "written": _written_ids(config_after),
    }
    kept = [t for t in planned if t.dest_name]
    return Plan(
        src=src, dst=dst, source_kind=source.kind, source_layout=source_layout.NAME, dest_layout=opts.to,
        engine=checkpoints.engine_of(opts.to), engine_version=str(version) if version else None,
        tensors=planned, config_before={k: v for k, v in source.config.items() if k != RECORD_KEY},
        config_after=config_after, drafter=drafter, layer_ids=layer_ids, notes=notes,
        shards=_shard(kept, opts.max_shard_size), extra_files=extras,
        metadata={**(source.metadata or {}), "format": "pt"}, force=opts.force, target=target, checksum=opts.checksum,
        trainer=_trainer(source_layout, source.config, prior), source_record=prior, source_roots=source.roots,
        engine_source=opts.engine_source,
    )


def _check_cast_available(dtype: str) -> None:
    """Casting is the one thing convert needs numpy for (tensors are otherwise copied byte for byte)."""
    import importlib.util

    if importlib.util.find_spec("numpy") is None:
        raise UsageError(f"--dtype {dtype} casts tensors with numpy, which is not installed",
                         hint="pip install 'compat[dtype]' (or numpy); without --dtype the tensors are copied unchanged")


def _read_drafter(source: SourceCheckpoint, layout: ModuleType, settled: Settled | None,
                  target: Target | None) -> DrafterConfig:
    """The canonical config, its layer ids read as `settled` says (the caller's, else checkpoints.settle's:
    compat's record, an unambiguous trainer fingerprint, the layout's own rule; ids whose convention nothing
    settles are refused with AmbiguousConvention, where doctor asks)."""
    if settled is None:
        settled = checkpoints.settle(layout, source.config, set(source.tensors), target=target)
    config: DrafterConfig = layout.read_config(source.config, ReadContext(settled, target))
    return config


def _inherit_basis(drafter: DrafterConfig, prior: dict | None) -> bool:
    """SRC converted by compat: when its record names the layers this reading finds, the earlier
    conversion's reason stands (this layout only re-read ids compat itself wrote)."""
    recorded = (prior or {}).get("layer_ids") or {}
    if drafter.layer_ids.basis != BASIS_LAYOUT or recorded.get("capture_before") != drafter.layer_ids.capture_before:
        return False
    if recorded.get("basis") in checkpoints.BASES:
        drafter.layer_ids.basis = recorded["basis"]
    drafter.layer_ids.origin += f"; as recorded by the conversion that wrote SRC ({recorded.get('basis')})"
    return True


def _trainer(layout, config: dict, prior: dict | None) -> dict:
    recorded = ((prior or {}).get("source") or {}).get("trainer")
    if isinstance(recorded, dict) and recorded.get("id") in checkpoints.TRAINERS:
        return {**recorded, "from": "record"}
    trainer_id = layout.trainer(config)
    return {"id": trainer_id, "description": checkpoints.TRAINERS[trainer_id], "from": "layout"}


def _planned_tensors(canonical, by_canonical, derived, dest_layout, drafter, wctx, out_dtype) -> list[PlannedTensor]:
    planned: list[PlannedTensor] = []
    reverse = {c: name for name, c in canonical.items()}
    for c in sorted(set(by_canonical) | set(derived), key=_tensor_order):
        tensor = by_canonical.get(c)
        dest_name = dest_layout.from_canonical(c, drafter, wctx)
        if tensor is None:
            made = derived[c]
            dtype, shape, source_obj, action = made.dtype, made.shape, bytes_source(made.dtype, made.shape, made.data, f"derived {c}"), "derive"
        else:
            dtype, shape, source_obj, action = tensor.dtype, tensor.shape, tensor.source(), "copy"
        new_dtype = out_dtype if out_dtype and dtype in FLOAT_DTYPES else dtype
        if dest_name is None:
            action = "drop"
        elif new_dtype != dtype:
            action = "convert"
        planned.append(PlannedTensor(c, reverse.get(c), dest_name, dtype, new_dtype, shape, action, source_obj))
    return planned


def check_paths(src: Path, dst: Path, force: bool) -> None:
    if dst == src or src in dst.parents or dst in src.parents:
        raise UsageError(f"DST {dst} overlaps SRC {src}", hint="write the converted drafter to a separate directory")
    if dst.exists() and not force:
        raise RefusedError(f"DST {dst} already exists", hint="pass --force to replace it, or pick another DST")
    if dst.exists() and not dst.is_dir():
        raise RefusedError(f"DST {dst} exists and is not a directory")
    if not dst.parent.is_dir():
        raise UsageError(f"the parent of DST, {dst.parent}, does not exist")


def _parse_version(text: str | None) -> Version | None:
    if text is None:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        raise UsageError(f"engine version {text!r} is not a release number", hint="for example --engine vllm==0.11.0 or sglang==0.5.12") from None


def _source_layout(source: SourceCheckpoint, forced: str | None):
    if forced:
        try:
            return checkpoints.get_layout(forced)
        except KeyError:
            raise UsageError(f"--from {forced}: unknown layout", hint=f"one of {', '.join(checkpoints.all_layouts())}") from None
    matches = checkpoints.detect_layout(source.config, set(source.tensors))
    if not matches:
        raise RefusedError(f"{source.path}: not a drafter layout this tool knows (no midlayer.* / layers.0.* tensors, no speculators config)",
                           hint=f"pass --from {'|'.join(checkpoints.all_layouts())}")
    return matches[0]


def _canonical_names(source: SourceCheckpoint, layout) -> dict[str, str]:
    mapping: dict[str, str] = {}
    unknown: list[str] = []
    seen: dict[str, str] = {}
    for name in source.tensors:
        canonical = layout.to_canonical(name)
        if canonical is None:
            unknown.append(name)
            continue
        if canonical in seen:
            raise CheckpointFormatError(f"{source.path}: tensors {seen[canonical]!r} and {name!r} are both {canonical!r}",
                                        hint="keep one spelling (midlayer.* or layers.0.*) and re-export")
        seen[canonical] = name
        mapping[name] = canonical
    if unknown:
        raise RefusedError(f"{source.path}: tensors the {layout.NAME} layout does not know: {', '.join(sorted(unknown)[:8])}"
                           f"{' ...' if len(unknown) > 8 else ''} (engines would skip them silently)",
                           hint="pass --from with the right layout, or remove tensors that are not part of the drafter")
    return mapping


def _tensor_order(name: str) -> tuple:
    index = layer_index(name)
    order = ["embed_tokens.weight", "fc.weight", "fc.bias", "input_norm.weight"]
    if index is not None:
        return (1, index, name)
    if name in order:
        return (0, order.index(name), name)
    return (2, 0, name)


def _written_ids(config: dict) -> dict:
    written = {}
    if "eagle_aux_hidden_state_layer_ids" in config:
        written["eagle_aux_hidden_state_layer_ids"] = config["eagle_aux_hidden_state_layer_ids"]
    nested = (config.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    if nested is not None:
        written["eagle_config.eagle_aux_hidden_state_layer_ids"] = nested
    return written


def _shard(tensors: list[PlannedTensor], max_bytes: int) -> list[tuple[str, list[PlannedTensor]]]:
    groups: list[list[PlannedTensor]] = [[]]
    size = 0
    for tensor in tensors:
        if groups[-1] and size + tensor.out_nbytes > max_bytes:
            groups.append([])
            size = 0
        groups[-1].append(tensor)
        size += tensor.out_nbytes
    if len(groups) == 1:
        return [(SINGLE_FILE, groups[0])]
    total = len(groups)
    return [(f"model-{i + 1:05d}-of-{total:05d}.safetensors", group) for i, group in enumerate(groups)]
