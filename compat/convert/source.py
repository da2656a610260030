"""Reading SRC: config.json, the provenance record, and the tensor headers (never the tensor bytes).

Every file is opened through compat/core/files.py: regular files only, never through a link out of SRC
(a Hugging Face cache snapshot's links into its repository's blobs/ are inside), JSON read with a size
limit. Files beside the weights (tokenizer, README, generation config) are carried into DST only when
they are regular files inside SRC; anything else is named in the plan's notes and left behind.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from compat.checkpoints import RECORD_FILE, RECORD_KEY
from compat.core.errors import CompatError, RefusedError, UsageError
from compat.core.files import input_roots, open_regular, read_json, refuse_os_error, regular_file, resolve_inside
from compat.safetensors_stream import (
    CheckpointFormatError, TensorInfo, TensorSource, bytes_source, file_source, read_header, read_tensor_bytes,
)

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
BIN_FILE = "pytorch_model.bin"


@dataclass
class SourceTensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    info: TensorInfo | None = None  # safetensors: a byte range of a file
    data: memoryview | None = None  # pytorch_model.bin: a memoryview of one tensor's bytes (mmap-backed)
    keepalive: object = None  # what owns `data`'s memory

    def source(self) -> TensorSource:
        if self.info is not None:
            return file_source(self.info)
        return bytes_source(self.dtype, self.shape, self._data(), f"{BIN_FILE}: tensor {self.name!r}")

    def read(self) -> bytes:
        """The whole tensor: only for small ones (d2t, t2d); the vocab_maps.MapTensor protocol."""
        return read_tensor_bytes(self.info) if self.info is not None else bytes(self._data())

    read_all = read

    def _data(self) -> memoryview:
        assert self.data is not None, "a tensor is a file range (info) or its bytes (data)"
        return self.data


@dataclass
class SourceCheckpoint:
    path: Path
    config: dict
    tensors: dict[str, SourceTensor]
    weight_files: list[str]
    metadata: dict[str, str] | None
    kind: str  # safetensors | sharded safetensors | pytorch_model.bin
    roots: tuple[Path, ...] = ()  # where SRC's files may really live (compat.core.files.input_roots)
    notes: list[str] = field(default_factory=list)

    @property
    def record(self) -> dict | None:
        value = self.config.get(RECORD_KEY)
        return value if isinstance(value, dict) else None


def open_source(src: Path) -> SourceCheckpoint:
    try:
        return _open_source(Path(src))
    except OSError as exc:
        raise refuse_os_error(exc, src, "reading SRC") from None


def check_source(src: Path) -> None:
    """SRC is a directory: there but the wrong kind is refused (4), nothing there is a usage error (2). Called before
    the release is looked for, and again when SRC is opened."""
    if src.exists() and not src.is_dir():
        raise RefusedError(f"SRC {src}: a file, not a drafter directory", hint="pass the drafter directory (config.json + weights)")
    if not src.is_dir():
        raise UsageError(f"SRC {src}: no such directory", hint="pass the drafter directory (config.json + weights)")


def _open_source(src: Path) -> SourceCheckpoint:
    check_source(src)
    roots = input_roots(src)
    config_path = src / "config.json"
    try:
        config = read_json(config_path, roots, "a drafter config.json")
    except FileNotFoundError:
        raise RefusedError(f"{config_path} not found", hint="SRC must hold the drafter's config.json") from None
    if not isinstance(config, dict):
        raise RefusedError(f"{config_path}: not a JSON object")
    notes = []
    if os.path.lexists(src / RECORD_FILE):
        try:
            config[RECORD_KEY] = read_json(src / RECORD_FILE, roots, "a compat conversion record")
        except (CompatError, FileNotFoundError) as exc:  # a broken record only loses the provenance
            notes.append(f"{RECORD_FILE} in SRC ignored: {str(exc).splitlines()[0]}")
    if os.path.lexists(src / INDEX_FILE):
        source = _open_sharded(src, config, roots)
    elif os.path.lexists(src / SINGLE_FILE):
        source = _open_single(src, SINGLE_FILE, config, roots)
    elif os.path.lexists(src / BIN_FILE):
        source = _open_bin(src, config, roots)
    else:
        others = sorted(p.name for p in src.glob("*.safetensors"))
        if len(others) != 1:
            raise RefusedError(f"{src}: no {SINGLE_FILE}, {INDEX_FILE} or {BIN_FILE}"
                               + (f" (found {len(others)} .safetensors files without an index)" if others else ""),
                               hint="SRC must be a drafter directory as save_pretrained writes it")
        source = _open_single(src, others[0], config, roots)
    source.notes[:0] = notes
    return source


def _header(path: Path, roots: tuple[Path, ...]):
    try:
        real, _ = regular_file(path, roots, "reading a safetensors file")
    except FileNotFoundError:
        raise RefusedError(f"{path}: missing", hint="the download is incomplete") from None
    return read_header(real)


def _from_header(header) -> dict[str, SourceTensor]:
    return {name: SourceTensor(name, t.dtype, t.shape, t.nbytes, info=t) for name, t in header.tensors.items()}


def _open_single(src: Path, name: str, config: dict, roots) -> SourceCheckpoint:
    header = _header(src / name, roots)
    return SourceCheckpoint(src, config, _from_header(header), [name], header.metadata, "safetensors", roots)


def _open_sharded(src: Path, config: dict, roots) -> SourceCheckpoint:
    index_path = src / INDEX_FILE
    index = read_json(index_path, roots, "a safetensors index")
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not (isinstance(weight_map, dict) and all(isinstance(v, str) for v in weight_map.values())):
        raise RefusedError(f"{index_path}: not a safetensors index (a JSON object with a weight_map)")
    files = sorted(set(weight_map.values()))
    tensors: dict[str, SourceTensor] = {}
    metadata = None
    for name in files:
        if "/" in name or "\\" in name or name.startswith(".") or "\0" in name:
            raise RefusedError(f"{index_path}: shard name {name!r} points outside SRC")
        path = src / name
        if not os.path.lexists(path):
            raise RefusedError(f"{index_path} lists {name}, which is missing", hint="the download is incomplete")
        header = _header(path, roots)
        metadata = metadata or header.metadata
        for tensor_name, tensor in _from_header(header).items():
            if tensor_name in tensors:
                first = tensors[tensor_name].info
                assert first is not None  # every tensor of a shard is a byte range of its file
                raise CheckpointFormatError(f"tensor {tensor_name!r} appears in two shards ({first.path.name} and {name})",
                                            hint="the shards come from different exports; re-download them")
            if weight_map.get(tensor_name) != name:
                raise CheckpointFormatError(f"{path}: holds tensor {tensor_name!r}, which {INDEX_FILE} places in {weight_map.get(tensor_name)}")
            tensors[tensor_name] = tensor
    missing = sorted(set(weight_map) - set(tensors))
    if missing:
        raise CheckpointFormatError(f"{index_path} places tensor {missing[0]!r} in {weight_map[missing[0]]}, which does not hold it"
                                    + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
                                    hint="the index and the shards come from different exports; re-download them")
    return SourceCheckpoint(src, config, tensors, files, metadata, "sharded safetensors", roots)


def _open_bin(src: Path, config: dict, roots) -> SourceCheckpoint:
    """pytorch_model.bin, checked against its own structure, unpickled only with weights_only=True, memory-mapped."""
    from .bin import read_bin

    real, _ = regular_file(src / BIN_FILE, roots, "reading pytorch_model.bin")
    tensors = {}
    for name, dtype, shape, data, keepalive in read_bin(real):
        tensors[name] = SourceTensor(name, dtype, shape, len(data), data=data, keepalive=keepalive)
    return SourceCheckpoint(src, config, tensors, [BIN_FILE], None, "pytorch_model.bin", roots)


# ---------------------------------------------------------------------------------------------
# The other files of SRC


def extra_files(source: SourceCheckpoint) -> tuple[list[str], list[str]]:
    """(names to copy, notes on the ones left behind): regular files inside SRC beside the weights."""
    skip = {"config.json", INDEX_FILE, RECORD_FILE, *source.weight_files}
    names, notes = [], []
    with os.scandir(source.path) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            name = entry.name
            if name in skip or name.endswith((".safetensors", ".bin")) or name.startswith(".") or entry.is_dir():
                continue
            try:
                real = resolve_inside(source.path / name, source.roots)
                mode = os.stat(real).st_mode
            except RefusedError:
                notes.append(f"{name}: a link to {os.path.realpath(source.path / name)}, outside SRC: not copied")
                continue
            except FileNotFoundError:
                notes.append(f"{name}: a dangling link: not copied")
                continue
            if not stat.S_ISREG(mode):
                notes.append(f"{name}: not a regular file: not copied")
                continue
            names.append(name)
    return names, notes


def copy_extra_file(source_dir: Path, roots: tuple[Path, ...], name: str, dest_dir: Path) -> None:
    """Copy one file of SRC as checked (regular, inside SRC) through its open descriptor; keeps mode and times."""
    fd, _, info = open_regular(source_dir / name, roots, f"copying {name}")
    try:
        with os.fdopen(fd, "rb", closefd=False) as reader, open(dest_dir / name, "xb") as writer:
            shutil.copyfileobj(reader, writer, 1 << 20)
            os.fchmod(writer.fileno(), stat.S_IMODE(info.st_mode))
            os.utime(writer.fileno(), ns=(info.st_atime_ns, info.st_mtime_ns))
    finally:
        os.close(fd)
