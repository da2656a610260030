"""Read and write safetensors files by their header, streaming tensor bytes.

A safetensors file is `<u64 little-endian header length><JSON header><tensor bytes>`. Renaming
tensors only rewrites the header, so conversion never decodes a tensor: the kernel copies each byte
range in pieces and each piece is read back and compared byte for byte with the source, which keeps
memory bounded whatever the checkpoint size. Dtype changes (only when asked for) decode one chunk at
a time through numpy.

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
from typing import Callable, Iterator

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
# Every written tensor is compared byte for byte with its source; a checksum is only a record. It is
# computed over the verified bytes when asked for: crc32 (~4 GB/s) or sha256 (~1.7 GB/s with SHA-NI)
# for digests worth publishing. Off by default: it would cost more CPU than the comparison itself.
CHECKSUMS = ("none", "crc32", "sha256")
CHECKSUM = "none"


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
    mismatch: str | None  # where the bytes read back from the output first differ from the source; None: identical
    digest: str | None = None  # checksum of the verified bytes, only when one was asked for (--checksum)


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


def new_checksum(algorithm: str = "crc32"):
    return _Crc32() if algorithm == "crc32" else hashlib.new(algorithm)


def hash_range(path: Path, offset: int, nbytes: int, algorithm: str = "crc32") -> str:
    digest = new_checksum(algorithm)
    for chunk in read_range(path, offset, nbytes, HASH_CHUNK_BYTES):
        digest.update(chunk)
    return digest.hexdigest()


def hash_tensor(info: TensorInfo, algorithm: str = "crc32") -> str:
    return hash_range(info.path, info.offset, info.nbytes, algorithm)


def write_safetensors(path: Path, tensors: list[OutputTensor], metadata: dict[str, str] | None,
                      on_bytes: Callable[[int], None] = lambda n: None, checksum: str = CHECKSUM) -> list[WrittenTensor]:
    """Write `tensors` in order to a new file at `path`, verify it byte for byte, fsync it.

    Tensor bytes that need no conversion are copied by the kernel (copy_file_range, as `cp` does)
    in COPY_RANGE_BYTES pieces. As each piece lands, one worker thread reads it back from the output
    and compares it with the same range of the source (both in the page cache: memcmp speed), while
    the main thread copies the next piece and the kernel starts writing the finished one to disk.
    Verification therefore overlaps the copy, and the final fsync waits only for the last pieces.
    """
    from concurrent.futures import ThreadPoolExecutor

    header = build_header(tensors, metadata)
    buffers = (bytearray(VERIFY_CHUNK_BYTES), bytearray(VERIFY_CHUNK_BYTES))  # the worker's, shared by all tensors
    checks = [_Check(t, checksum, buffers) for t in tensors]
    pending = []
    with open(path, "xb", buffering=0) as out, open(path, "rb", buffering=0) as readback:
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="compat-verify")  # FIFO: pieces in order
        try:
            _write_all(out, header)
            position = flushed = len(header)
            for tensor, check in zip(tensors, checks):
                check.start = position
                source = tensor.source
                if tensor.dtype == source.dtype and source.file is not None:
                    copied = position

                    def piece_done(n: int, check=check) -> None:  # verify, then start flushing, what just landed
                        nonlocal copied, flushed
                        pending.append(worker.submit(check.compare_file_range, readback.fileno(), copied, n))
                        copied += n
                        if WRITEBACK_BYTES and copied - flushed >= WRITEBACK_BYTES:
                            pending.append(worker.submit(_start_writeback, out.fileno(), flushed, copied - flushed))
                            flushed = copied
                        on_bytes(n)

                    _copy_range(source, out, piece_done)
                else:
                    _copy_tensor(out, tensor, on_bytes)
                    pending.append(worker.submit(check.compare_generated, readback.fileno()))
                position += output_nbytes(tensor)
            os.fsync(out.fileno())  # durable before the directory is renamed into place; overlaps the last compares
            for future in pending:
                future.result()
        finally:  # before the files close: a crash mid-copy waits for the running compare only, not the queue
            worker.shutdown(wait=True, cancel_futures=True)
    return [check.result() for check in checks]


COPY_RANGE_BYTES = 8 * 1024 * 1024  # per copy_file_range call: the unit of progress, verification and writeback (fits L3)
WRITEBACK_BYTES = COPY_RANGE_BYTES  # start writing verified bytes to disk in batches this big; 0: leave it to fsync
# Early writeback hides the final fsync (0.7 s of 4.4 GiB here) when the source is in the page cache. With a
# cold source it looked slower in this VM (bench/bench_convert.py --cold), but cold runs there are dominated
# by re-faulting memory dropped from the page cache: unresolved, see the bench notes.
VERIFY_CHUNK_BYTES = 1024 * 1024  # compare buffers that stay in the CPU cache (8 MiB ones compared 2x slower here)


class _Check:
    """Byte-for-byte verification of one written tensor, piece by piece, in the worker thread."""

    def __init__(self, tensor: OutputTensor, checksum: str, buffers: tuple[bytearray, bytearray]):
        self.tensor = tensor
        self.start = 0  # offset of the tensor's first byte in the output file
        self.mismatch: str | None = None
        self.digest = new_checksum(checksum) if checksum != "none" else None
        self._source_buffer, self._readback_buffer = buffers

    def result(self) -> WrittenTensor:
        t = self.tensor
        return WrittenTensor(t.name, t.dtype, t.source.shape, self.mismatch,
                             self.digest.hexdigest() if self.digest is not None and self.mismatch is None else None)

    def compare_file_range(self, readback_fd: int, position: int, nbytes: int) -> None:
        """Compare output bytes [position, position + nbytes) with the matching source range."""
        path, offset = self.tensor.source.file
        with open(path, "rb", buffering=0) as source:
            self._compare(readback_fd, position, _pread_chunks(source.fileno(), offset + position - self.start, nbytes,
                                                               self._source_buffer, self.tensor.source.label))

    def compare_generated(self, readback_fd: int) -> None:
        """Regenerate the bytes written through userspace (from memory, or converted) and compare them."""
        self._compare(readback_fd, self.start, _output_chunks(self.tensor))

    def _compare(self, readback_fd: int, position: int, expected: Iterator[memoryview | bytes]) -> None:
        if self.mismatch is not None:
            return
        readback = self._readback_buffer
        for chunk in expected:
            chunk = memoryview(chunk)
            got = memoryview(readback)[: len(chunk)] if len(chunk) <= len(readback) else memoryview(bytearray(len(chunk)))
            if os.preadv(readback_fd, [got], position) != len(chunk):
                self.mismatch = f"the output ends early, at byte {position - self.start} of the tensor"
                return
            if not _same_bytes(chunk, got):
                index = next(i for i in range(len(chunk)) if chunk[i] != got[i])
                where = position - self.start + index
                self.mismatch = (f"byte {where} of {output_nbytes(self.tensor)} read back from the output is "
                                 f"0x{got[index]:02x}, the source has 0x{chunk[index]:02x}")
                return
            if self.digest is not None:
                self.digest.update(got)
            position += len(chunk)


def _same_bytes(a: memoryview, b: memoryview) -> bool:
    """memcmp when both views cover whole bytes/bytearray objects; memoryview == compares item by item (~0.4 GB/s)."""
    if len(a) != len(b):
        return False
    if _whole(a) and _whole(b):
        return b.obj == a.obj  # bytearray.__eq__ takes any buffer: memcmp
    return a.tobytes() == b.tobytes()  # a tensor's ragged last chunk: one copy of < VERIFY_CHUNK_BYTES


def _whole(view: memoryview) -> bool:
    return isinstance(view.obj, (bytes, bytearray)) and len(view.obj) == view.nbytes and view.contiguous


def _pread_chunks(fd: int, offset: int, nbytes: int, buffer: bytearray, label: str) -> Iterator[memoryview]:
    view = memoryview(buffer)
    while nbytes:
        want = view[: min(len(view), nbytes)]
        got = os.preadv(fd, [want], offset)
        if not got:
            raise CheckpointFormatError(f"{label}: the source ended {nbytes} bytes early while verifying",
                                        hint="the source changed or was truncated during conversion")
        yield want[:got]
        offset += got
        nbytes -= got


_SYNC_FILE_RANGE_WRITE = 2
_libc_sync_file_range = None


def _start_writeback(fd: int, offset: int, nbytes: int) -> None:
    """Ask the kernel to start writing these bytes to disk now (sync_file_range(SYNC_FILE_RANGE_WRITE),
    which does not wait), so the final fsync waits only for the tail instead of the whole file."""
    global _libc_sync_file_range
    if _libc_sync_file_range is None:
        try:
            import ctypes

            function = ctypes.CDLL(None, use_errno=True).sync_file_range
            function.argtypes = (ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint)
            _libc_sync_file_range = function
        except (OSError, AttributeError):  # not Linux / glibc: fsync alone does it
            _libc_sync_file_range = False
    if _libc_sync_file_range:
        _libc_sync_file_range(fd, offset, nbytes, _SYNC_FILE_RANGE_WRITE)  # advisory: errors surface in fsync


def _copy_range(source: TensorSource, out, on_bytes: Callable[[int], None]) -> None:
    """Copy a byte range of the source file to the current position of `out`, in the kernel."""
    path, offset = source.file
    remaining = source.nbytes
    with open(path, "rb", buffering=0) as f:
        if hasattr(os, "posix_fadvise"):  # as cp does: larger readahead when the source is not cached
            os.posix_fadvise(f.fileno(), offset, remaining, os.POSIX_FADV_SEQUENTIAL)
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


def _output_chunks(tensor: OutputTensor) -> Iterator[memoryview | bytes]:
    """The bytes to write for a tensor that goes through userspace: from memory, or converted chunk by chunk.

    Deterministic, so verification regenerates them to compare with what was read back."""
    converted = tensor.dtype != tensor.source.dtype
    element = DTYPE_SIZES[tensor.source.dtype]
    carry = b""
    copied = 0
    for chunk in tensor.source.chunks():
        copied += len(chunk)
        if converted:
            data = carry + bytes(chunk)
            usable = len(data) - len(data) % element
            yield convert_chunk(memoryview(data)[:usable], tensor.source.dtype, tensor.dtype)
            carry = data[usable:]
        else:
            yield chunk
    if copied != tensor.source.nbytes or carry:
        raise CheckpointFormatError(f"{tensor.source.label}: read {copied} bytes, expected {tensor.source.nbytes}",
                                    hint="the source changed during conversion")


def _copy_tensor(out, tensor: OutputTensor, on_bytes: Callable[[int], None]) -> None:
    """Bytes from memory, or a dtype conversion: through userspace, chunk by chunk."""
    for data in _output_chunks(tensor):
        _write_all(out, data)
        on_bytes(len(data))  # output bytes, as the progress total counts them


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
