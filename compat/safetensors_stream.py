"""Read and write safetensors files by their header, streaming tensor bytes.

A safetensors file is `<u64 little-endian header length><JSON header><tensor bytes>`. Renaming
tensors only rewrites the header, so conversion never decodes a tensor: it copies each byte range
in chunks and hashes the bytes on the way, which keeps memory bounded whatever the checkpoint
size. Dtype changes (only when asked for) decode one chunk at a time through numpy.

Every structural check the format allows is made before a single byte is written, because a
checkpoint may be truncated, hand-edited or hostile: header length vs file size, JSON, duplicate
names, known dtypes, shapes x dtype size == byte length, offsets in range, no overlaps and no gaps.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from compat.errors import RefusedError

# safetensors dtype codes and their element sizes in bytes (safetensors/src/tensor.rs).
DTYPE_SIZES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "I64": 8, "U64": 8, "F64": 8, "C64": 8,
}
FLOAT_DTYPES = {"F16", "BF16", "F32"}  # the ones --dtype converts between
DTYPE_NAMES = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}  # --dtype / torch_dtype spellings

# The same cap as the safetensors library: a header above this is refused before it is read.
MAX_HEADER_BYTES = 100 * 1024 * 1024
CHUNK_BYTES = 1024 * 1024  # userspace chunks stay in the CPU cache (8 MiB ones ran 1.7x slower here)
COPY_CHUNK_BYTES = CHUNK_BYTES
HASH_CHUNK_BYTES = 1024 * 1024
# Per-tensor checksum comparing the written bytes with the source. crc32 (~4 GB/s) catches copy
# corruption at little cost; sha256 (~1.7 GB/s with SHA-NI) gives digests worth publishing.
CHECKSUMS = ("crc32", "sha256")
CHECKSUM = "crc32"


class CheckpointFormatError(RefusedError):
    """The input is not a well-formed checkpoint; the message names the file and the key."""


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a safetensors file: where its bytes are, not the bytes."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    path: Path
    offset: int  # absolute offset of the first byte in `path`
    nbytes: int


@dataclass(frozen=True)
class SafetensorsHeader:
    path: Path
    tensors: dict[str, TensorInfo]  # in file order
    metadata: dict[str, str] | None
    data_start: int


def _reject_duplicates(pairs: list[tuple[str, object]]) -> dict:
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def read_header(path: Path) -> SafetensorsHeader:
    """Parse and validate the header of `path`; reads only the header bytes."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as f:
        prefix = f.read(8)
        if len(prefix) < 8:
            raise CheckpointFormatError(f"{path}: {size} bytes, too short to be safetensors (no 8-byte header length)",
                                        hint="the file is truncated; download or copy it again")
        (header_len,) = struct.unpack("<Q", prefix)
        if header_len > MAX_HEADER_BYTES:
            raise CheckpointFormatError(f"{path}: header length {header_len} bytes exceeds the {MAX_HEADER_BYTES}-byte limit",
                                        hint="the file is not safetensors or is corrupt")
        if 8 + header_len > size:
            raise CheckpointFormatError(f"{path}: header length {header_len} runs beyond the end of the file ({size} bytes)",
                                        hint="the file is truncated or not safetensors; download or copy it again")
        raw = f.read(header_len)
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_reject_duplicates)
    except _DuplicateKey as dup:
        raise CheckpointFormatError(f"{path}: tensor name {dup.key!r} appears twice in the header",
                                    hint="the file was written by a broken tool; re-export it") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointFormatError(f"{path}: the header is not valid JSON ({exc})",
                                    hint="the file is corrupt or not safetensors") from None
    if not isinstance(header, dict):
        raise CheckpointFormatError(f"{path}: the header is JSON but not an object")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        raise CheckpointFormatError(f"{path}: __metadata__ must map strings to strings")
    data_start = 8 + header_len
    data_len = size - data_start
    tensors = [_tensor_info(path, name, entry, data_start, data_len) for name, entry in header.items()]
    _check_coverage(path, tensors, data_len, data_start)
    tensors.sort(key=lambda t: t.offset)
    return SafetensorsHeader(path, {t.name: t for t in tensors}, metadata, data_start)


def _tensor_info(path: Path, name: str, entry: object, data_start: int, data_len: int) -> TensorInfo:
    where = f"{path}: tensor {name!r}"
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
        raise CheckpointFormatError(f"{where}: entry must have dtype, shape and data_offsets")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype not in DTYPE_SIZES:
        raise CheckpointFormatError(f"{where}: unknown dtype {dtype!r} (known: {', '.join(sorted(DTYPE_SIZES))})",
                                    hint="the file is corrupt or written by a newer format; re-export it")
    if not (isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        raise CheckpointFormatError(f"{where}: shape {shape!r} is not a list of non-negative integers")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
        raise CheckpointFormatError(f"{where}: data_offsets {offsets!r} is not a pair of integers")
    begin, end = offsets
    if not 0 <= begin <= end <= data_len:
        raise CheckpointFormatError(f"{where}: data_offsets [{begin}, {end}] out of range of the {data_len} data bytes",
                                    hint="the file is truncated or its header is corrupt")
    expected = math.prod(shape) * DTYPE_SIZES[dtype]
    if end - begin != expected:
        raise CheckpointFormatError(f"{where}: {end - begin} bytes but shape {shape} x {dtype} needs {expected}",
                                    hint="the header is corrupt")
    return TensorInfo(name, dtype, tuple(shape), path, data_start + begin, end - begin)


def _check_coverage(path: Path, tensors: list[TensorInfo], data_len: int, data_start: int) -> None:
    """Tensors must tile the data section: no overlap (aliasing) and no hidden gaps."""
    position = data_start
    for tensor in sorted(tensors, key=lambda t: (t.offset, t.nbytes)):
        if tensor.offset < position:
            raise CheckpointFormatError(f"{path}: tensor {tensor.name!r} overlaps the tensor before it "
                                        f"(starts at data byte {tensor.offset - data_start}, previous ends at {position - data_start})",
                                        hint="the header is corrupt or crafted; re-export the checkpoint")
        if tensor.offset > position:
            raise CheckpointFormatError(f"{path}: {tensor.offset - position} unreferenced bytes before tensor {tensor.name!r}",
                                        hint="the header is corrupt; re-export the checkpoint")
        position = tensor.offset + tensor.nbytes
    if position != data_start + data_len:
        raise CheckpointFormatError(f"{path}: {data_start + data_len - position} bytes after the last tensor are not referenced",
                                    hint="the file has trailing garbage or a corrupt header")


# ---------------------------------------------------------------------------------------------
# Sources of tensor bytes: a byte range of a file, or bytes already in memory (small derived
# tensors such as a t2d built from d2t, or one tensor of a torch pickle).


@dataclass
class TensorSource:
    """What the writer copies: a dtype, a shape and a way to stream the bytes."""

    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    chunks: Callable[[], Iterator[memoryview]]
    label: str  # where the bytes come from, for messages
    file: tuple[Path, int] | None = None  # (path, absolute offset) when the bytes are a file range


def file_source(info: TensorInfo) -> TensorSource:
    def chunks() -> Iterator[memoryview]:
        yield from read_range(info.path, info.offset, info.nbytes)

    return TensorSource(info.dtype, info.shape, info.nbytes, chunks, f"{info.path}: tensor {info.name!r}",
                        (info.path, info.offset))


def bytes_source(dtype: str, shape: tuple[int, ...], data: bytes | memoryview, label: str) -> TensorSource:
    view = memoryview(data).cast("B")

    def chunks() -> Iterator[memoryview]:
        for start in range(0, len(view), CHUNK_BYTES):
            yield view[start:start + CHUNK_BYTES]

    return TensorSource(dtype, tuple(shape), len(view), chunks, label)


def read_range(path: Path, offset: int, nbytes: int, chunk: int = CHUNK_BYTES) -> Iterator[memoryview]:
    """Yield the bytes [offset, offset + nbytes) of `path`, `chunk` at a time, in a reused buffer.

    Each yielded view is valid only until the next one is requested.
    """
    buffers = (bytearray(min(chunk, max(nbytes, 1))), bytearray(min(chunk, max(nbytes, 1))))
    with open(path, "rb", buffering=0) as f:
        f.seek(offset)
        remaining, which = nbytes, 0
        while remaining:
            buf = memoryview(buffers[which])[: min(chunk, remaining)]
            got = f.readinto(buf)
            if not got:
                raise CheckpointFormatError(f"{path}: ended {remaining} bytes early while reading at byte {offset + nbytes - remaining}",
                                            hint="the file changed or was truncated during conversion")
            remaining -= got
            yield buf[:got]
            which ^= 1


def read_tensor_bytes(info: TensorInfo) -> bytes:
    """The whole tensor in memory: only for small tensors (d2t, t2d)."""
    return b"".join(bytes(c) for c in read_range(info.path, info.offset, info.nbytes))


# ---------------------------------------------------------------------------------------------
# Dtype conversion, chunk by chunk (elementwise, so chunks need only be element-aligned).


def convert_chunk(data: memoryview, src: str, dst: str) -> bytes:
    import numpy as np

    if src == dst:
        return bytes(data)
    values = _to_float32(np.frombuffer(data, dtype=_NUMPY_STORAGE[src]), src)
    return _from_float32(values, dst).tobytes()


_NUMPY_STORAGE = {"F32": "<f4", "F16": "<f2", "BF16": "<u2"}


def _to_float32(array, dtype: str):
    import numpy as np

    if dtype == "BF16":  # bf16 is the top half of a float32
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float32)


def _from_float32(values, dtype: str):
    import numpy as np

    if dtype == "F32":
        return values.astype("<f4")
    if dtype == "F16":
        return values.astype("<f2")
    bits = values.astype("<f4").view(np.uint32)
    # round to nearest even; NaNs keep a quiet-NaN payload instead of rounding into infinity
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(values)
    if nan.any():
        rounded[nan] = ((bits[nan] >> np.uint32(16)) | np.uint32(0x0040)).astype(np.uint16)
    return rounded


# ---------------------------------------------------------------------------------------------
# Writing


@dataclass(frozen=True)
class OutputTensor:
    name: str
    source: TensorSource
    dtype: str  # the dtype written; differs from source.dtype only for --dtype


@dataclass(frozen=True)
class WrittenTensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    source_digest: str  # checksum of the bytes read from the source
    output_digest: str  # checksum of the bytes meant to be written (== source_digest unless converted)
    readback_digest: str  # checksum of the bytes read back from the written file


def output_nbytes(tensor: OutputTensor) -> int:
    return math.prod(tensor.source.shape) * DTYPE_SIZES[tensor.dtype]


def build_header(tensors: list[OutputTensor], metadata: dict[str, str] | None) -> bytes:
    header: dict[str, object] = {}
    if metadata:
        header["__metadata__"] = metadata
    position = 0
    for tensor in tensors:
        size = output_nbytes(tensor)
        header[tensor.name] = {"dtype": tensor.dtype, "shape": list(tensor.source.shape), "data_offsets": [position, position + size]}
        position += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # keep tensor data 8-byte aligned, as the safetensors library does
    return struct.pack("<Q", len(raw)) + raw


class _Crc32:
    """zlib.crc32 behind the hashlib interface: ~4 GB/s here, and it releases the GIL."""

    name = "crc32"

    def __init__(self):
        self._value = 0

    def update(self, data) -> None:
        self._value = zlib.crc32(data, self._value)

    def hexdigest(self) -> str:
        return f"{self._value:08x}"


def new_checksum(algorithm: str = CHECKSUM):
    return _Crc32() if algorithm == "crc32" else hashlib.new(algorithm)


def hash_range(path: Path, offset: int, nbytes: int, algorithm: str = CHECKSUM) -> str:
    digest = new_checksum(algorithm)
    for chunk in read_range(path, offset, nbytes, HASH_CHUNK_BYTES):
        digest.update(chunk)
    return digest.hexdigest()


def hash_tensor(info: TensorInfo, algorithm: str = CHECKSUM) -> str:
    return hash_range(info.path, info.offset, info.nbytes, algorithm)


def hash_tensors(infos: Iterable[TensorInfo], algorithm: str = CHECKSUM, workers: int = 2) -> dict[str, str]:
    """Checksums of many tensors, `workers` at once, largest first (hashing releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    infos = sorted(infos, key=lambda i: -i.nbytes)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip((i.name for i in infos), pool.map(lambda i: hash_tensor(i, algorithm), infos)))


def write_safetensors(path: Path, tensors: list[OutputTensor], metadata: dict[str, str] | None,
                      on_bytes: Callable[[int], None] = lambda n: None, checksum: str = CHECKSUM) -> list[WrittenTensor]:
    """Write `tensors` in order to a new file at `path`.

    Tensor bytes that need no conversion are copied by the kernel (copy_file_range, as `cp` does)
    while one worker thread checksums the source range and then reads back and checksums what was
    written, so verification costs little more than the copy itself.
    """
    from concurrent.futures import Future, ThreadPoolExecutor

    header = build_header(tensors, metadata)
    results: list[tuple[Future | str, Future | str | None, Future]] = []
    # two checksum threads (source ranges, read-back ranges) beside the kernel copy: 2 cores busy
    with ThreadPoolExecutor(max_workers=2) as worker, open(path, "xb", buffering=0) as out:
        _write_all(out, header)
        position = len(header)
        for tensor in tensors:
            source = tensor.source
            if tensor.dtype == source.dtype and source.file is not None:
                source_digest = worker.submit(hash_range, source.file[0], source.file[1], source.nbytes, checksum)
                _copy_range(source, out, on_bytes)
                output_digest = None  # the same bytes
            else:
                source_digest, output_digest = _copy_tensor(out, tensor, on_bytes, checksum)
            size = output_nbytes(tensor)
            readback = worker.submit(hash_range, Path(path), position, size, checksum)
            position += size
            results.append((source_digest, output_digest, readback))
        os.fsync(out.fileno())  # durable before the directory is renamed into place
        written = []
        for tensor, (source_digest, output_digest, readback) in zip(tensors, results):
            source_digest = source_digest if isinstance(source_digest, str) else source_digest.result()
            written.append(WrittenTensor(tensor.name, tensor.dtype, tensor.source.shape, source_digest,
                                         output_digest or source_digest, readback.result()))
    return written


COPY_RANGE_BYTES = 256 * 1024 * 1024  # per copy_file_range call: progress updates, bounded kernel work


def _copy_range(source: TensorSource, out, on_bytes: Callable[[int], None]) -> None:
    """Copy a byte range of the source file to the current position of `out`, in the kernel."""
    path, offset = source.file
    remaining = source.nbytes
    with open(path, "rb", buffering=0) as f:
        while remaining:
            try:
                got = os.copy_file_range(f.fileno(), out.fileno(), min(remaining, COPY_RANGE_BYTES), offset)
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF):
                    raise
                got = _copy_range_userspace(f, out, offset, min(remaining, COPY_RANGE_BYTES))
            if not got:
                raise CheckpointFormatError(f"{source.label}: the file ended {remaining} bytes early",
                                            hint="the source changed or was truncated during conversion")
            offset += got
            remaining -= got
            on_bytes(got)


def _copy_range_userspace(f, out, offset: int, nbytes: int) -> int:
    """The fallback where the kernel cannot copy between these files (old kernels, some filesystems)."""
    buffer = memoryview(bytearray(min(nbytes, COPY_CHUNK_BYTES)))
    done = 0
    while done < nbytes:
        got = os.preadv(f.fileno(), [buffer[: min(len(buffer), nbytes - done)]], offset + done)
        if not got:
            break
        _write_all(out, buffer[:got])
        done += got
    return done


def _copy_tensor(out, tensor: OutputTensor, on_bytes: Callable[[int], None], checksum: str) -> tuple[str, str | None]:
    """Bytes from memory, or a dtype conversion: through userspace, chunk by chunk."""
    converted = tensor.dtype != tensor.source.dtype
    element = DTYPE_SIZES[tensor.source.dtype]
    source_digest, output_digest = new_checksum(checksum), new_checksum(checksum)
    carry = b""
    copied = 0
    for chunk in tensor.source.chunks():
        copied += len(chunk)
        source_digest.update(chunk)
        if converted:
            data = carry + bytes(chunk)
            usable = len(data) - len(data) % element
            data, carry = convert_chunk(memoryview(data)[:usable], tensor.source.dtype, tensor.dtype), data[usable:]
            output_digest.update(data)
        else:
            data = chunk
        _write_all(out, data)
        on_bytes(len(chunk))
    if copied != tensor.source.nbytes or carry:
        raise CheckpointFormatError(f"{tensor.source.label}: read {copied} bytes, expected {tensor.source.nbytes}",
                                    hint="the source changed during conversion")
    return source_digest.hexdigest(), output_digest.hexdigest() if converted else None


def _write_all(out, data) -> None:
    view = memoryview(data)
    while view:
        written = out.write(view)
        view = view[written:]


def parse_size(text: str) -> int:
    """'5GB', '500MB', '2GiB', '1024' -> bytes (decimal units like transformers' max_shard_size)."""
    units = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
             "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
    cleaned = text.strip().upper()
    number = cleaned.rstrip("KMGTIB")
    unit = cleaned[len(number):]
    try:
        value = float(number)
    except ValueError:
        value = -1
    if unit not in units or value <= 0:
        raise ValueError(f"not a size: {text!r} (examples: 5GB, 500MB, 2GiB)")
    return int(value * units[unit])
