"""`compat convert ckpt`: make an EAGLE-3 drafter loadable and correct on a named engine release.

Data flow: checkpoint -> layout (checkpoints/) -> checkpoint.

    open_source   read config.json and the tensor headers (never the tensor bytes)
    make_plan     detect the source layout, read the canonical config, translate layer ids,
                  validate tensors and vocab maps, check the target, write the destination config
    execute       copy tensor bytes into a temporary directory beside DST, compare every byte
                  read back with the source, verify what the layout loads, then rename it into place
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from compat import checkpoints
from compat.checkpoints._canonical import (
    CAPTURE_BEFORE, CONVENTIONS, LLAMA_LAYER0, MLA_LAYER0, RECORD_FILE, RECORD_KEY, REQUIRED_TOP, DrafterConfig,
    LayerIds, ReadContext, TargetInfo, WriteContext, default_layer_ids, ids_from_declared, layer_index, read_target,
)
from compat.errors import EXIT_CHECK_FAILED, EXIT_OK, CompatError, RefusedError, UsageError
from compat.safetensors_stream import (
    CHECKSUM, CHECKSUMS, DTYPE_NAMES, DTYPE_SIZES, FLOAT_DTYPES, CheckpointFormatError, OutputTensor, TensorInfo,
    TensorSource, WrittenTensor, bytes_source, file_source, parse_size, read_header, read_tensor_bytes,
    write_safetensors,
)

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
BIN_FILE = "pytorch_model.bin"
DEFAULT_MAX_SHARD = "5GB"  # transformers' save_pretrained default; a Kimi drafter with embed_tokens is ~4.7 GB
ENGINES = {"vllm": "vllm", "sglang": "sglang"}  # layouts that belong to one engine's releases


class VerificationError(CompatError):
    exit_code = EXIT_CHECK_FAILED


# ---------------------------------------------------------------------------------------------
# Reading the source


@dataclass
class SourceTensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    info: TensorInfo | None = None  # safetensors: a byte range of a file
    data: object = None  # pytorch_model.bin: a memoryview of one tensor's bytes (mmap-backed)

    def source(self) -> TensorSource:
        if self.info is not None:
            return file_source(self.info)
        return bytes_source(self.dtype, self.shape, self.data, f"{BIN_FILE}: tensor {self.name!r}")

    def read_all(self) -> bytes:
        return read_tensor_bytes(self.info) if self.info is not None else bytes(self.data)


@dataclass
class SourceCheckpoint:
    path: Path
    config: dict
    tensors: dict[str, SourceTensor]
    weight_files: list[str]
    metadata: dict[str, str] | None
    kind: str  # safetensors | sharded safetensors | pytorch_model.bin


def open_source(src: Path) -> SourceCheckpoint:
    if not src.is_dir():
        raise UsageError(f"SRC {src} is not a directory", hint="pass the drafter directory (config.json + weights)")
    config_path = src / "config.json"
    try:
        config = json.loads(config_path.read_text())
    except FileNotFoundError:
        raise RefusedError(f"{config_path} not found", hint="SRC must hold the drafter's config.json") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RefusedError(f"{config_path}: not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise RefusedError(f"{config_path}: not a JSON object")
    record_path = src / RECORD_FILE
    if record_path.is_file():
        try:
            config[RECORD_KEY] = json.loads(record_path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            pass  # a broken record only loses the provenance; the config still reads
    if (src / INDEX_FILE).is_file():
        return _open_sharded(src, config)
    if (src / SINGLE_FILE).is_file():
        header = read_header(src / SINGLE_FILE)
        return SourceCheckpoint(src, config, _from_header(header), [SINGLE_FILE], header.metadata, "safetensors")
    if (src / BIN_FILE).is_file():
        return _open_bin(src, config)
    others = sorted(p.name for p in src.glob("*.safetensors"))
    if len(others) == 1:
        header = read_header(src / others[0])
        return SourceCheckpoint(src, config, _from_header(header), others, header.metadata, "safetensors")
    raise RefusedError(f"{src}: no {SINGLE_FILE}, {INDEX_FILE} or {BIN_FILE}"
                       + (f" (found {len(others)} .safetensors files without an index)" if others else ""),
                       hint="SRC must be a drafter directory as save_pretrained writes it")


def _from_header(header) -> dict[str, SourceTensor]:
    return {name: SourceTensor(name, t.dtype, t.shape, t.nbytes, info=t) for name, t in header.tensors.items()}


def _open_sharded(src: Path, config: dict) -> SourceCheckpoint:
    index_path = src / INDEX_FILE
    try:
        index = json.loads(index_path.read_text())
        weight_map = index["weight_map"]
        assert isinstance(weight_map, dict) and all(isinstance(v, str) for v in weight_map.values())
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AssertionError):
        raise RefusedError(f"{index_path}: not a safetensors index (a JSON object with a weight_map)") from None
    files = sorted(set(weight_map.values()))
    tensors: dict[str, SourceTensor] = {}
    metadata = None
    for name in files:
        if "/" in name or name.startswith("."):
            raise RefusedError(f"{index_path}: shard name {name!r} points outside SRC")
        path = src / name
        if not path.is_file():
            raise RefusedError(f"{index_path} lists {name}, which is missing", hint="the download is incomplete")
        header = read_header(path)
        metadata = metadata or header.metadata
        for tensor_name, tensor in _from_header(header).items():
            if tensor_name in tensors:
                raise CheckpointFormatError(f"tensor {tensor_name!r} appears in two shards ({tensors[tensor_name].info.path.name} and {name})",
                                            hint="the shards come from different exports; re-download them")
            if weight_map.get(tensor_name) != name:
                raise CheckpointFormatError(f"{path}: holds tensor {tensor_name!r}, which {INDEX_FILE} places in {weight_map.get(tensor_name)}")
            tensors[tensor_name] = tensor
    missing = sorted(set(weight_map) - set(tensors))
    if missing:
        raise CheckpointFormatError(f"{index_path} places tensor {missing[0]!r} in {weight_map[missing[0]]}, which does not hold it"
                                    + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
                                    hint="the index and the shards come from different exports; re-download them")
    return SourceCheckpoint(src, config, tensors, files, metadata, "sharded safetensors")


_TORCH_DTYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64", "int64": "I64",
                 "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
                 "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2"}


def _open_bin(src: Path, config: dict) -> SourceCheckpoint:
    """pytorch_model.bin, unpickled only with weights_only=True and memory-mapped."""
    path = src / BIN_FILE
    try:
        import torch
    except ImportError:
        raise RefusedError(f"{path}: reading a pickle checkpoint needs torch", hint="pip install torch (CPU build is enough)") from None
    import pickle

    try:
        try:
            state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:
            if "mmap" not in str(exc) and "zip" not in str(exc):
                raise
            state = torch.load(path, map_location="cpu", weights_only=True)  # legacy (non-zip) format: no mmap
    except pickle.UnpicklingError as exc:
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else "unsupported object"
        raise RefusedError(f"{path}: the pickle holds more than plain tensors, refused by torch.load(weights_only=True): {reason}",
                           hint="only a state dict of tensors is accepted; re-save it with torch.save(model.state_dict()) "
                                "or convert it to safetensors in a sandbox you trust") from None
    except Exception as exc:  # truncated or not a torch file
        raise RefusedError(f"{path}: cannot be read as a torch checkpoint ({type(exc).__name__}: {exc})",
                           hint="the file is truncated or corrupt; download it again") from None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        kinds = sorted({type(v).__name__ for v in (state.values() if isinstance(state, dict) else [state])} - {"Tensor"})
        raise RefusedError(f"{path}: holds {type(state).__name__} with {', '.join(kinds) or 'non-string keys'}, not only tensors",
                           hint="pass a plain state dict (name -> tensor)")
    tensors = {}
    for name, tensor in state.items():
        dtype = _TORCH_DTYPES.get(str(tensor.dtype).removeprefix("torch."))
        if dtype is None:
            raise CheckpointFormatError(f"{path}: tensor {name!r} has dtype {tensor.dtype}, which safetensors cannot hold")
        flat = tensor.detach().contiguous().reshape(-1)
        data = memoryview(flat.view(torch.uint8).numpy()) if flat.numel() else memoryview(b"")
        tensors[name] = SourceTensor(name, dtype, tuple(tensor.shape), len(data), data=data)
    return SourceCheckpoint(src, config, tensors, [BIN_FILE], None, "pytorch_model.bin")


# ---------------------------------------------------------------------------------------------
# Planning


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
    target: TargetInfo | None = None
    checksum: str = CHECKSUM

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
            "engine": self.engine, "engine_version": self.engine_version,
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
    engine_version: str | None = None
    target: Path | None = None
    layer_ids: list[int] | None = None
    layer_ids_convention: str | None = None
    dtype: str | None = None
    max_shard_size: int = parse_size(DEFAULT_MAX_SHARD)
    force: bool = False
    checksum: str = CHECKSUM


def make_plan(opts: Options) -> Plan:
    src, dst = opts.src.resolve(), opts.dst.resolve()
    _check_paths(src, dst, opts.force)
    layouts = checkpoints.all_layouts()
    if opts.to not in layouts:
        raise UsageError(f"--to {opts.to}: unknown layout", hint=f"one of {', '.join(layouts)}")
    version = _parse_version(opts.engine_version)
    target = read_target(opts.target) if opts.target else None
    source = open_source(src)
    notes: list[str] = []

    source_layout = _source_layout(source, opts.source_layout)
    canonical = _canonical_names(source, source_layout)
    drafter = source_layout.read_config(source.config, ReadContext(opts.layer_ids_convention, target))
    if opts.layer_ids is not None:
        drafter.layer_ids = ids_from_declared(opts.layer_ids, opts.layer_ids_convention or CAPTURE_BEFORE, "--layer-ids",
                                              "given on the command line")
    if drafter.layer_ids.capture_before is None and target and target.num_hidden_layers:
        drafter.layer_ids = LayerIds(default_layer_ids(target.num_hidden_layers),
                                     f"not declared: the engines' default (2, n//2, n-3) for the target's {target.num_hidden_layers} layers")
    if drafter.target_family is None and target is not None:
        drafter.target_family = target.family

    by_canonical = {c: source.tensors[name] for name, c in canonical.items()}
    _check_layers(drafter, by_canonical, notes)
    _check_shapes(drafter, by_canonical, notes)
    derived = _check_vocab_maps(drafter, by_canonical, notes)
    if target is not None:
        _check_target(drafter, by_canonical, target, notes)

    out_dtype = DTYPE_NAMES[opts.dtype] if opts.dtype else None
    if opts.dtype:
        drafter.torch_dtype = opts.dtype

    dest_layout = layouts[opts.to]
    wctx = WriteContext(version, target)
    config_after = dest_layout.write_config(drafter, wctx)
    if version is not None and opts.to not in ENGINES:
        wctx.note(f"--engine-version {version} does not change the {opts.to} layout (written for every release)")
    notes = wctx.notes + notes

    planned: list[PlannedTensor] = []
    reverse = {c: name for name, c in canonical.items()}
    for c in sorted(set(by_canonical) | set(derived), key=_tensor_order):
        tensor = by_canonical.get(c)
        dest_name = dest_layout.from_canonical(c, drafter, wctx)
        if tensor is None:  # derived
            dtype, shape, data = derived[c]
            source_obj = bytes_source(dtype, shape, data, f"derived {c}")
            action = "derive"
        else:
            dtype, shape, source_obj = tensor.dtype, tensor.shape, tensor.source()
            action = "copy"
        new_dtype = out_dtype if out_dtype and dtype in FLOAT_DTYPES else dtype
        if dest_name is None:
            action = "drop"
        elif new_dtype != dtype:
            action = "convert"
        planned.append(PlannedTensor(c, reverse.get(c), dest_name, dtype, new_dtype, shape, action, source_obj))
    dest_names = [t.dest_name for t in planned if t.dest_name]
    if len(dest_names) != len(set(dest_names)):
        raise RefusedError(f"--to {opts.to}: two tensors map to the same name", hint="the source holds the same tensor under two spellings")

    layer_ids = {
        "capture_before": drafter.layer_ids.capture_before,
        "origin": drafter.layer_ids.origin,
        "declared": drafter.layer_ids.declared,
        "declared_field": drafter.layer_ids.declared_field,
        "declared_convention": drafter.layer_ids.convention,
        "written": _written_ids(config_after),
    }
    kept = [t for t in planned if t.dest_name]
    return Plan(
        src=src, dst=dst, source_kind=source.kind, source_layout=source_layout.NAME, dest_layout=opts.to,
        engine=ENGINES.get(opts.to), engine_version=str(version) if version else None,
        tensors=planned, config_before={k: v for k, v in source.config.items() if k != RECORD_KEY},
        config_after=config_after, drafter=drafter, layer_ids=layer_ids, notes=notes,
        shards=_shard(kept, opts.max_shard_size), extra_files=_extra_files(source),
        metadata={**(source.metadata or {}), "format": "pt"}, force=opts.force, target=target, checksum=opts.checksum,
    )


def _check_paths(src: Path, dst: Path, force: bool) -> None:
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
        raise UsageError(f"--engine-version {text!r} is not a release number", hint="for example 0.11.0 or 0.5.12") from None


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
    mapping, unknown, seen = {}, [], {}
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


def _check_layers(drafter: DrafterConfig, tensors: dict[str, SourceTensor], notes: list[str]) -> None:
    missing_top = [name for name in REQUIRED_TOP if name not in tensors]
    if missing_top:
        raise RefusedError(f"the checkpoint has no {', '.join(missing_top)}: engines would leave "
                           f"{'it' if len(missing_top) == 1 else 'them'} randomly initialised without a word",
                           hint="export the drafter again with every trained tensor (lm_head included)")
    layers = sorted({layer_index(name) for name in tensors if layer_index(name) is not None})
    if not layers:
        raise RefusedError("the checkpoint has no decoder layer (no midlayer.* or layers.0.* tensors)")
    if layers != list(range(len(layers))):
        raise RefusedError(f"decoder layers {layers} are not numbered 0..{len(layers) - 1}")
    if drafter.num_hidden_layers != len(layers):
        notes.append(f"num_hidden_layers: config says {drafter.num_hidden_layers}, the checkpoint holds {len(layers)} layer(s); "
                     f"writing {len(layers)} (a target's layer count here breaks both engines)")
        drafter.num_hidden_layers = len(layers)
    expected = MLA_LAYER0 if drafter.family == "mla" else LLAMA_LAYER0
    for k in layers:
        wanted = [s for s in expected if k == 0 or s != "hidden_norm.weight"]
        missing = [f"layers.{k}.{s}" for s in wanted if f"layers.{k}.{s}" not in tensors]
        if missing:
            raise RefusedError(f"decoder layer {k} lacks {', '.join(missing)}: engines would keep random weights there silently",
                               hint="the export dropped part of the layer; export again")


def _shape(tensors: dict[str, SourceTensor], name: str) -> tuple[int, ...] | None:
    return tensors[name].shape if name in tensors else None


def _check_shapes(drafter: DrafterConfig, tensors: dict[str, SourceTensor], notes: list[str]) -> None:
    hidden = drafter.hidden_size
    norm = _shape(tensors, "norm.weight")
    if norm != (hidden,):
        raise RefusedError(f"norm.weight has shape {list(norm)}, config.json hidden_size is {hidden}",
                           hint="the config does not belong to these weights")
    lm_head = _shape(tensors, "lm_head.weight")
    if len(lm_head) != 2 or lm_head[1] != hidden:
        raise RefusedError(f"lm_head.weight has shape {list(lm_head)}, expected [draft_vocab_size, {hidden}]")
    if drafter.draft_vocab_size is None:
        notes.append(f"draft_vocab_size: absent from config.json, set to lm_head rows ({lm_head[0]})")
        drafter.draft_vocab_size = lm_head[0]
    if lm_head[0] != drafter.draft_vocab_size:
        raise RefusedError(f"lm_head.weight has {lm_head[0]} rows but draft_vocab_size is {drafter.draft_vocab_size}: "
                           "row i of lm_head scores draft token i, so they must be equal",
                           hint="fix draft_vocab_size in config.json, or the export truncated lm_head")
    embed = _shape(tensors, "embed_tokens.weight")
    if embed is not None:
        if drafter.vocab_size is None:
            drafter.vocab_size = embed[0]
        if embed != (drafter.vocab_size, hidden):
            raise RefusedError(f"embed_tokens.weight has shape {list(embed)}, expected [vocab_size {drafter.vocab_size}, hidden {hidden}]")
    fc = _shape(tensors, "fc.weight")
    per_aux = drafter.target_hidden_size or hidden
    expected_in = drafter.aux_count * per_aux
    if len(fc) != 2 or fc[0] != hidden or fc[1] != expected_in:
        raise RefusedError(f"fc.weight has shape {list(fc)}, expected [{hidden}, {drafter.aux_count} aux states x "
                           f"{'target_hidden_size' if drafter.target_hidden_size else 'hidden_size'} {per_aux} = {expected_in}]",
                           hint="set target_hidden_size (or the layer-id count) to what the drafter was trained with")


def _check_vocab_maps(drafter: DrafterConfig, tensors: dict[str, SourceTensor], notes: list[str]) -> dict:
    """Validate d2t/t2d and derive the missing one; returns {name: (dtype, shape, bytes)} to add."""
    import numpy as np

    vd = drafter.draft_vocab_size
    d2t, t2d = tensors.get("d2t"), tensors.get("t2d")
    convention = "d2t holds offsets: target_id = draft_id + d2t[draft_id] (built as sorted(used)[i] - i)"
    if t2d is not None:
        if t2d.dtype not in ("BOOL", "U8") or len(t2d.shape) != 1:
            raise RefusedError(f"t2d has dtype {t2d.dtype} and shape {list(t2d.shape)}; expected a bool mask [target vocab]")
        if drafter.vocab_size is None:
            drafter.vocab_size = t2d.shape[0]
        if t2d.shape[0] != drafter.vocab_size:
            raise RefusedError(f"t2d has {t2d.shape[0]} entries but vocab_size (the target vocabulary) is {drafter.vocab_size}")
    v = drafter.vocab_size
    if d2t is None and t2d is None:
        if v is not None and vd < v:
            raise RefusedError(f"draft_vocab_size {vd} < vocab_size {v} but the checkpoint has neither d2t nor t2d: "
                               "the engines would take draft ids for target ids and draft the wrong tokens",
                               hint="copy d2t/t2d from the training run that produced lm_head")
        return {}
    targets = None
    if d2t is not None:
        if d2t.dtype not in ("I64", "I32") or d2t.shape != (vd,):
            raise RefusedError(f"d2t has dtype {d2t.dtype} and shape {list(d2t.shape)}; expected int64 [draft_vocab_size {vd}]",
                               hint=convention)
        offsets = np.frombuffer(d2t.read_all(), dtype="<i8" if d2t.dtype == "I64" else "<i4").astype(np.int64)
        targets = np.arange(vd, dtype=np.int64) + offsets
        if (offsets < 0).any():
            i = int(np.argmax(offsets < 0))
            raise RefusedError(f"d2t[{i}] = {offsets[i]} is negative; {convention}, so it is non-negative and non-decreasing",
                               hint="the map is corrupt or from another tool")
        if vd > 1 and not (np.diff(targets) > 0).all():
            i = int(np.argmax(np.diff(targets) <= 0))
            raise RefusedError(f"d2t maps draft ids {i} and {i + 1} to target ids {targets[i]} and {targets[i + 1]}: "
                               f"not strictly increasing; {convention}",
                               hint="if d2t holds absolute target ids, convert it with d2t - arange(draft_vocab_size)")
        if v is not None and targets[-1] >= v:
            absolute = (np.diff(offsets) > 0).all() and offsets[-1] < v
            raise RefusedError(f"d2t maps draft id {vd - 1} to target id {targets[-1]}, beyond vocab_size {v}; {convention}",
                               hint=("d2t looks like absolute target ids: store d2t - arange(draft_vocab_size)" if absolute
                                     else "the map belongs to another vocabulary"))
    if t2d is not None:
        mask = np.frombuffer(t2d.read_all(), dtype=np.uint8)
        if (mask > 1).any():
            raise RefusedError("t2d holds values other than 0/1; it must be a bool mask over the target vocabulary")
        marked = np.flatnonzero(mask)
        if len(marked) != vd:
            raise RefusedError(f"t2d marks {len(marked)} target tokens but draft_vocab_size is {vd}: "
                               "exactly draft_vocab_size entries must be true", hint="d2t/t2d come from another run than lm_head")
        if targets is not None and not np.array_equal(marked, targets):
            i = int(np.argmax(marked != targets))
            raise RefusedError(f"d2t and t2d disagree at draft id {i}: d2t gives target {targets[i]}, "
                               f"t2d's {i}-th marked token is {marked[i]}; {convention}",
                               hint="keep the pair from the same training run")
    derived = {}
    if d2t is None:
        offsets = (marked - np.arange(vd)).astype("<i8")
        derived["d2t"] = ("I64", (vd,), offsets.tobytes())
        notes.append(f"d2t: derived from t2d (offsets, {vd} entries)")
    if t2d is None and v is not None:
        mask = np.zeros(v, dtype=np.uint8)
        mask[targets] = 1
        derived["t2d"] = ("BOOL", (v,), mask.tobytes())
        notes.append(f"t2d: derived from d2t ({v} entries, {vd} true)")
    elif t2d is None:
        notes.append("t2d: not derived (vocab_size unknown; pass --target)")
    return derived


def _check_target(drafter: DrafterConfig, tensors: dict[str, SourceTensor], target: TargetInfo, notes: list[str]) -> None:
    where = f"--target {target.path}"
    problems = []
    per_aux = drafter.target_hidden_size or drafter.hidden_size
    if target.hidden_size and per_aux != target.hidden_size:
        problems.append(f"the drafter expects target hidden states of width {per_aux} "
                        f"({'target_hidden_size' if drafter.target_hidden_size else 'hidden_size'}), the target's hidden_size is {target.hidden_size}")
    if target.vocab_size:
        if drafter.vocab_size is None:
            drafter.vocab_size = target.vocab_size
            notes.append(f"vocab_size: set to the target's {target.vocab_size}")
        elif drafter.vocab_size != target.vocab_size:
            problems.append(f"the drafter's vocab_size (target vocabulary: embed_tokens rows, t2d length) is {drafter.vocab_size}, "
                            f"the target's is {target.vocab_size}")
    fc = tensors["fc.weight"].shape
    if target.hidden_size and fc[1] != drafter.aux_count * target.hidden_size:
        problems.append(f"fc.weight takes {fc[1]} inputs, the target gives {drafter.aux_count} x {target.hidden_size} = "
                        f"{drafter.aux_count * target.hidden_size}")
    ids, n = drafter.layer_ids.capture_before, target.num_hidden_layers
    if ids and n:
        top = n - 1 if target.family == "deepseek" else n  # Llama-family targets also capture the final pre-norm state (id n)
        bad = [i for i in ids if not 0 <= i <= top]
        if bad:
            problems.append(f"layer ids {bad} (capture-before) are outside the target's {n} layers (0..{top})")
    draft_context = drafter.fields.get("max_position_embeddings")
    if target.max_position_embeddings and isinstance(draft_context, int) and draft_context < target.max_position_embeddings:
        notes.append(f"warning: max_position_embeddings {draft_context} is below the target's {target.max_position_embeddings}: "
                     "SGLang refuses the pair (SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1), vLLM before 0.30 limits the context; "
                     "kept as trained")
    if problems:
        raise RefusedError(f"the drafter does not match {where}: " + "; ".join(problems),
                           hint="convert against the target the drafter was trained for")


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


def _extra_files(source: SourceCheckpoint) -> list[str]:
    """Files beside the weights (tokenizer, README, generation config) are carried over as is."""
    skip = {"config.json", INDEX_FILE, RECORD_FILE, *source.weight_files}
    return sorted(p.name for p in source.path.iterdir()
                  if p.is_file() and p.name not in skip and not p.name.endswith((".safetensors", ".bin")) and not p.name.startswith("."))


# ---------------------------------------------------------------------------------------------
# Executing and verifying


@dataclass
class Result:
    dst: Path
    files: list[str]
    bytes_written: int
    tensors: list[WrittenTensor] = field(default_factory=list)
    verified: bool = False
    checksum: str = CHECKSUM

    def to_json(self) -> dict:
        return {"dst": str(self.dst), "files": self.files, "bytes_written": self.bytes_written, "verified": self.verified,
                "checksum": self.checksum,
                "tensors": {t.name: {"dtype": t.dtype, "shape": list(t.shape), "checksum": t.digest} for t in self.tensors}}


def execute(plan: Plan, progress: bool = True) -> Result:
    """Write into a temporary directory beside DST, verify, then rename it into place."""
    total = sum(t.out_nbytes for _, items in plan.shards for t in items)
    tmp = Path(tempfile.mkdtemp(prefix=f".{plan.dst.name}.compat-tmp-", dir=plan.dst.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it 0700; DST gets the mode `mkdir` would give it
        written: list[WrittenTensor] = []
        with _progress(total, enabled=progress) as advance:
            for file_name, items in plan.shards:
                outputs = [OutputTensor(t.dest_name, t.source, t.out_dtype) for t in items]
                written += write_safetensors(tmp / file_name, outputs, plan.metadata, on_bytes=advance, checksum=plan.checksum)
        if len(plan.shards) > 1:
            weight_map = {t.dest_name: name for name, items in plan.shards for t in items}
            _write_json(tmp / INDEX_FILE, {"metadata": {"total_size": total}, "weight_map": weight_map})
        _write_json(tmp / "config.json", plan.config_after)
        for name in plan.extra_files:
            shutil.copy2(plan.src / name, tmp / name)
        _write_json(tmp / RECORD_FILE, _record(plan, written))
        verify(tmp, plan, written)
        _fsync_tree(tmp)
        _move_into_place(tmp, plan.dst, plan.force)
        _fsync_dir(plan.dst.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    files = [name for name, _ in plan.shards]
    return Result(plan.dst, files, total, written, verified=True, checksum=plan.checksum)


class _progress:
    """A rich progress bar on stderr over the bytes copied (only on a terminal)."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self._progress = total, enabled, None

    def __enter__(self):
        if not self.enabled:
            return lambda n: None
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

        console = Console(stderr=True)
        if not console.is_terminal:
            return lambda n: None
        self._progress = Progress(TextColumn("copying tensors"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                                  TimeRemainingColumn(), console=console, transient=True)
        self._progress.start()
        task = self._progress.add_task("copy", total=self.total)
        return lambda n: self._progress.advance(task, n)

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.stop()
        return False


def _write_json(path: Path, data: dict) -> None:
    with open(path, "x") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def _record(plan: Plan, written: list[WrittenTensor]) -> dict:
    by_dest = {t.dest_name: t for t in plan.tensors if t.dest_name}
    return {
        "tool": "compat convert ckpt",
        "layout": plan.dest_layout,
        "engine": plan.engine,
        "engine_version": plan.engine_version,
        "target_family": plan.target.family if plan.target else plan.drafter.target_family,
        "source": {"path": str(plan.src), "layout": plan.source_layout, "format": plan.source_kind},
        "layer_ids": plan.layer_ids,
        "notes": plan.notes,
        "verified": "byte for byte against the source",
        "checksum": plan.checksum,
        "tensors": {t.name: {"source": by_dest[t.name].source_name, "action": by_dest[t.name].action,
                             **({"checksum": t.digest} if t.digest else {})} for t in written},
    }


def verify(out_dir: Path, plan: Plan, written: list[WrittenTensor]) -> None:
    """Re-open the output: the destination layout must read it back, with every tensor the
    destination loads, the planned shapes and dtypes, and each tensor's bytes, read back from the
    output as they were written, equal to the source's byte for byte."""
    problems = []
    infos: dict[str, TensorInfo] = {}
    for file_name, _ in plan.shards:
        try:
            infos.update(read_header(out_dir / file_name).tensors)
        except CompatError as exc:
            raise VerificationError(f"verification: the written {file_name} does not read back: {exc}") from None
    expected = {t.name: t for t in written}
    if set(infos) != set(expected):
        problems.append(f"tensor set differs: missing {sorted(set(expected) - set(infos))}, unexpected {sorted(set(infos) - set(expected))}")
    dest_layout = checkpoints.get_layout(plan.dest_layout)
    canonical = {dest_layout.to_canonical(name) for name in infos}
    wanted = {t.canonical for t in plan.tensors if t.dest_name}
    if None in canonical or canonical != wanted:
        problems.append(f"the {plan.dest_layout} layout reads back {sorted(c for c in canonical if c)}, planned {sorted(wanted)}")
    for name, info in infos.items():
        want = expected.get(name)
        if want and (info.dtype != want.dtype or info.shape != tuple(want.shape)):
            problems.append(f"{name}: written as {info.dtype} {list(info.shape)}, planned {want.dtype} {list(want.shape)}")
    for tensor in written:  # compared with the source as each piece was copied (write_safetensors)
        if tensor.mismatch:
            problems.append(f"{tensor.name}: {tensor.mismatch}")
    config = json.loads((out_dir / "config.json").read_text())
    config[RECORD_KEY] = json.loads((out_dir / RECORD_FILE).read_text())
    try:
        reread = dest_layout.read_config(config, ReadContext(target=plan.target))
    except CompatError as exc:
        problems.append(f"the written config.json does not read back as {plan.dest_layout}: {exc}")
    else:
        if reread.layer_ids.capture_before != plan.drafter.layer_ids.capture_before:
            problems.append(f"the written config reads back layer ids {reread.layer_ids.capture_before}, "
                            f"planned {plan.drafter.layer_ids.capture_before}")
    matches = checkpoints.detect_layout(config, set(infos))
    if not matches or matches[0].NAME != plan.dest_layout:
        problems.append(f"the output is detected as {matches[0].NAME if matches else 'no layout'}, not {plan.dest_layout}")
    if problems:
        raise VerificationError("verification of the written checkpoint failed (nothing was moved into DST):\n  - "
                                + "\n  - ".join(problems))


def _fsync_tree(directory: Path) -> None:
    """The small files (safetensors shards were synced as written) and the directory entry itself."""
    for path in directory.iterdir():
        if path.suffix != ".safetensors":
            with open(path, "rb") as f:
                os.fsync(f.fileno())
    _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _move_into_place(tmp: Path, dst: Path, force: bool) -> None:
    if not dst.exists():
        os.rename(tmp, dst)
        return
    if not force:  # appeared while we were writing
        raise RefusedError(f"DST {dst} appeared during the conversion", hint="pass --force to replace it")
    old = Path(tempfile.mkdtemp(prefix=f".{dst.name}.compat-old-", dir=dst.parent))
    os.rename(dst, old / dst.name)
    try:
        os.rename(tmp, dst)
    except BaseException:
        os.rename(old / dst.name, dst)
        raise
    shutil.rmtree(old, ignore_errors=True)
