"""Sources of tensor bytes for the writer: a byte range of a file, or bytes already in memory (small
derived tensors such as a t2d built from d2t, or one tensor of a torch pickle); and checksums of ranges."""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from compat.safetensors_stream.header import CheckpointFormatError, TensorInfo

CHUNK_BYTES = 1024 * 1024  # userspace chunks stay in the CPU cache (8 MiB ones ran 1.7x slower here)
HASH_CHUNK_BYTES = 1024 * 1024
# Every written tensor is compared byte for byte with its source; a checksum is only a record. It is
# computed over the verified bytes when asked for: crc32 (~4 GB/s) or sha256 (~1.7 GB/s with SHA-NI)
# for digests worth publishing. Off by default: it would cost more CPU than the comparison itself.
CHECKSUMS = ("none", "crc32", "sha256")
CHECKSUM = "none"


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
