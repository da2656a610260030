"""Read and write safetensors files by their header, streaming tensor bytes.

A safetensors file is `<u64 little-endian header length><JSON header><tensor bytes>`. Renaming
tensors only rewrites the header, so conversion never decodes a tensor: the kernel copies each byte
range in pieces and each piece is read back and compared byte for byte with the source, which keeps
memory bounded whatever the checkpoint size. Dtype changes (only when asked for) decode one chunk at
a time through numpy.

Every structural check the format allows is made before a single byte is written, because a
checkpoint may be truncated, hand-edited or hostile, and the header reader takes any bytes: it
accepts what the safetensors library accepts (which vLLM and SGLang load with) and answers
everything else with a CheckpointFormatError naming the file and the key, in bounded time and memory.

- header.py: read_header (and the few refusals stricter than the library, STRICTER), encode_header
- bounded_json.py: JSON read as serde_json reads it, with bounded depth, numbers and size
- dtypes.py: dtype names and sizes, the --dtype float conversions
- source.py: where tensor bytes come from (file ranges, memory) and checksums of them
- this file: the writer, which copies, verifies and fsyncs. It lives in the package's own module so
  that its tuning constants and seams (COPY_RANGE_BYTES, _copy_range, ...) stay attributes of
  compat.safetensors_stream, where the tests and bench/bench_convert.py set them.
"""

from __future__ import annotations

import errno
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Literal

from compat.safetensors_stream.dtypes import DTYPE_BITS, DTYPE_NAMES, DTYPE_SIZES, FLOAT_DTYPES, convert_chunk
from compat.safetensors_stream.header import (
    LIBRARY_MAX_HEADER_BYTES, MAX_HEADER_BYTES, MAX_JSON_VALUES, STRICTER, CheckpointFormatError, SafetensorsHeader,
    TensorInfo, encode_header, parse_header, read_header,
)
from compat.safetensors_stream.source import (
    CHECKSUM, CHECKSUMS, CHUNK_BYTES, HASH_CHUNK_BYTES, TensorSource, bytes_source, file_source, hash_range,
    hash_tensor, new_checksum, read_range, read_tensor_bytes,
)

__all__ = [
    "CHECKSUM", "CHECKSUMS", "CHUNK_BYTES", "COPY_CHUNK_BYTES", "COPY_RANGE_BYTES", "DTYPE_BITS", "DTYPE_NAMES",
    "DTYPE_SIZES", "FLOAT_DTYPES", "HASH_CHUNK_BYTES", "LIBRARY_MAX_HEADER_BYTES", "MAX_HEADER_BYTES",
    "MAX_JSON_VALUES", "STRICTER", "VERIFY_CHUNK_BYTES", "WRITEBACK_BYTES", "CheckpointFormatError", "OutputTensor",
    "SafetensorsHeader", "TensorInfo", "TensorSource", "WrittenTensor", "build_header", "bytes_source",
    "convert_chunk", "encode_header", "file_source", "hash_range", "hash_tensor", "new_checksum", "output_nbytes",
    "parse_header", "parse_size", "read_header", "read_range", "read_tensor_bytes", "write_safetensors",
]

COPY_CHUNK_BYTES = CHUNK_BYTES


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
    """The header for `tensors` laid out in order; refuses what the safetensors library would not read."""
    return encode_header([(t.name, t.dtype, t.source.shape, output_nbytes(t)) for t in tensors], metadata)


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
        file = self.tensor.source.file
        assert file is not None  # the writer compares only tensors it copied from a file range
        path, offset = file
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
_libc_sync_file_range: Callable[..., int] | Literal[False] | None = None  # None: not looked up yet


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
    assert source.file is not None  # the writer copies only tensors that are a file range
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
