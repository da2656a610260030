"""The safetensors header: any bytes in, a validated header or a CheckpointFormatError out; and the
header the writer emits, which the safetensors library is sure to read.

A file is `<u64 little-endian N><N bytes of UTF-8 JSON><data>`. What is accepted is what the
safetensors library accepts (0.8: `read_metadata` and `Metadata::validate` in safetensors/src/tensor.rs,
parsed by serde_json), because vLLM and SGLang load checkpoints through it; a differential fuzz
(tests/checkpoints/test_header_fuzz.py) holds the two together:

- N <= 100,000,000 and 8 + N <= the file size; the N bytes are UTF-8 and JSON as serde_json reads it
  (see bounded_json.py: no NaN, no lone surrogate escapes, numbers a float can hold, 127 levels deep);
- a JSON object: "__metadata__" is null or an object of strings; every other key is a tensor name and
  its value an object with "dtype" (one of the library's names), "shape" (integers 0..2**64-1) and
  "data_offsets" (two of them), each once; other fields are ignored, as the library ignores them;
- the element count is the product of the shape folded left with a 64-bit overflow check at every
  step, like the library's (so [2**62, 2**62, 0] is refused although its product is 0), times the
  dtype's bits (no overflow, whole bytes) == end - begin; sorted by offsets, the tensors tile the
  data section exactly: no gap, no overlap, nothing after the last one.

Where compat refuses what the library reads, the refusal's `stricter` says why (a key of STRICTER):
- duplicate-key: a tensor name or a __metadata__ key given twice. The library keeps the last one
  silently, so which tensor an engine loads would depend on the reader. (A second "__metadata__",
  or a field of a tensor given twice, the library refuses too.)
- tensor-as-array: a tensor given as ["F32", [2], [0, 8]]; dtype-as-object: a dtype given as
  {"F32": null}. serde reads the sequence form of a struct and the map form of an enum; no writer
  emits them, and a reader that is not serde would not read them.
- sub-byte-dtype: F4, F6_E2M3, F6_E3M2 (elements packed into shared bytes): compat copies and
  converts whole bytes per element (DTYPE_SIZES has no entry for them).
- header-size: a header over MAX_HEADER_BYTES, 16 MiB (the library: 100,000,000 bytes);
  value-count: more than MAX_JSON_VALUES (1,048,576) commas, brackets and braces in the header,
  counted before parsing, those inside strings too. Memory stays bounded (~170 MB at the bounds).
- number-length: a number literal over 1,000 characters, which can only sit in a field the library
  ignores (it refuses longer integers too: they overflow a float): work stays bounded.

Nothing else differs: gaps, overlaps, trailing bytes, overflowing shapes, NaN, lone surrogates, 128
levels of nesting are refused by both. The reader's work and memory are bounded whatever the file
says: the bounds above, number literals never converted when long, sizes checked as they are
multiplied (no big-integer products), messages showing values abridged, and no recursion.
"""

from __future__ import annotations

import json
import os
import reprlib
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NoReturn

from compat.core.errors import RefusedError
from compat.safetensors_stream import bounded_json
from compat.safetensors_stream.dtypes import DTYPE_BITS, DTYPE_SIZES

LIBRARY_MAX_HEADER_BYTES = 100_000_000  # the library refuses a longer header
# compat's own bounds, so that reading a header takes well under 256 MB whatever the file holds
# (bench/bench_hostile.py measures it). Real headers are far below them: ~130 bytes and 8 commas,
# brackets and braces per tensor, so these allow ~120,000 tensors in one file (~170 MB to read).
MAX_HEADER_BYTES = 16 * 1024 * 1024
MAX_JSON_VALUES = 1 << 20

STRICTER = {
    "duplicate-key": "a tensor name or __metadata__ key given twice: the library keeps the last one silently, "
                     "so which tensor an engine loads would depend on the reader",
    "tensor-as-array": 'a tensor given as ["F32", [2], [0, 8]] instead of an object: serde accepts the array form '
                       "of a struct, no writer emits it",
    "dtype-as-object": 'a dtype given as {"F32": null}: serde accepts the map form of an enum, no writer emits it',
    "sub-byte-dtype": "F4, F6_E2M3 and F6_E3M2 pack elements into shared bytes; compat copies and converts whole "
                      "bytes per element",
    "header-size": f"a header over {MAX_HEADER_BYTES:,} bytes (the library allows {LIBRARY_MAX_HEADER_BYTES:,}): "
                   "memory stays bounded",
    "value-count": f"more than {MAX_JSON_VALUES:,} commas, brackets and braces in the header (those inside strings "
                   "count too: the bound is taken before parsing, without a copy): memory stays bounded",
    "number-length": f"a number literal over {bounded_json.MAX_NUMBER_CHARS} characters (only possible in a field "
                     "the library ignores): work stays bounded",
}
_HINT_CORRUPT = "the file is corrupt, truncated or not safetensors; download or export it again"

_short = reprlib.Repr()
_short.maxstring, _short.maxother, _short.maxlist, _short.maxdict, _short.maxlevel = 60, 60, 6, 4, 2


def brief(value: object) -> str:
    """repr abridged: a message names a 4 MB shape or a 1 MB name by its start."""
    return _short.repr(value)


class CheckpointFormatError(RefusedError):
    """The input is not a well-formed checkpoint; the message names the file and the key.

    `stricter` is set (a key of STRICTER) when the safetensors library would have read the file."""

    def __init__(self, message: str, *, hint: str | None = None, stricter: str | None = None):
        super().__init__(message, hint=hint)
        self.stricter = stricter


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


def read_header(path: Path) -> SafetensorsHeader:
    """Parse and validate the header of `path`; reads only the header bytes."""
    path = Path(path)
    raw, size = _read_header_bytes(path)
    return parse_header(path, raw, size)


def _read_header_bytes(path: Path) -> tuple[bytearray, int]:
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise RefusedError(f"{path}: cannot open: {exc.strerror}", hint="check that the file exists and is readable") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CheckpointFormatError(f"{path}: not a regular file", hint="point at the checkpoint file itself")
        size = info.st_size
        prefix = os.pread(fd, 8, 0)
        if len(prefix) < 8:
            raise CheckpointFormatError(f"{path}: {size} bytes, too short to be safetensors (no 8-byte header length)",
                                        hint="the file is truncated; download or copy it again")
        (header_len,) = struct.unpack("<Q", prefix)
        _check_header_length(path, header_len, size)
        raw = _pread_all(fd, header_len, 8)
    except OSError as exc:
        raise RefusedError(f"{path}: cannot read: {exc.strerror}", hint="check the disk and the file") from None
    finally:
        os.close(fd)
    if len(raw) < header_len:
        raise CheckpointFormatError(f"{path}: ended while reading its {header_len}-byte header",
                                    hint="the file changed or was truncated while being read")
    return raw, size


def _pread_all(fd: int, nbytes: int, offset: int) -> bytearray:
    buffer = bytearray(nbytes)
    view, done = memoryview(buffer), 0
    while done < nbytes:
        got = os.preadv(fd, [view[done:]], offset + done)
        if not got:
            break
        done += got
    return buffer if done == nbytes else buffer[:done]  # no copy of a whole header


def _check_header_length(path: Path, header_len: int, size: int) -> None:
    if header_len > LIBRARY_MAX_HEADER_BYTES:
        raise CheckpointFormatError(f"{path}: header length {header_len} bytes exceeds the safetensors limit of "
                                    f"{LIBRARY_MAX_HEADER_BYTES:,} bytes", hint=_HINT_CORRUPT)
    if 8 + header_len > size:
        raise CheckpointFormatError(f"{path}: header length {header_len} runs beyond the end of the file ({size} bytes)",
                                    hint="the file is truncated or not safetensors; download or copy it again")
    if header_len > MAX_HEADER_BYTES:
        raise CheckpointFormatError(f"{path}: header of {header_len:,} bytes; compat reads headers up to "
                                    f"{MAX_HEADER_BYTES:,} bytes (~120,000 tensors)", stricter="header-size",
                                    hint="save the checkpoint in shards (save_pretrained(max_shard_size=...))")


def parse_header(path: Path, raw: bytes | bytearray, file_size: int) -> SafetensorsHeader:
    """Validate the header bytes `raw` of a file of `file_size` bytes (8 + len(raw) + data)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointFormatError(f"{path}: the header is not UTF-8 text (byte {exc.start} is 0x{raw[exc.start]:02x})",
                                    hint=_HINT_CORRUPT) from None
    header = _parse_json(path, text)
    if type(header) is not bounded_json.JsonObject:
        raise CheckpointFormatError(f"{path}: the header is JSON but not an object", hint=_HINT_CORRUPT)
    # serde refuses a second __metadata__ ("duplicate field") and keeps the last of two tensors
    _refuse_duplicates(path, header, "tensor name", library_refuses=lambda key: key == "__metadata__")
    metadata = header.pop("__metadata__", None)
    _check_metadata(path, metadata)
    data_start = 8 + len(raw)
    data_len = file_size - data_start
    tensors = [_tensor_info(path, name, entry, data_start, data_len) for name, entry in header.items()]
    tensors.sort(key=lambda t: (t.offset, t.nbytes))
    _check_coverage(path, tensors, data_len, data_start)
    return SafetensorsHeader(path, {t.name: t for t in tensors}, metadata, data_start)


def _parse_json(path: Path, text: str) -> object:
    try:
        return bounded_json.loads(text, MAX_JSON_VALUES)
    except json.JSONDecodeError as exc:
        raise CheckpointFormatError(f"{path}: the header is not valid JSON ({exc.msg} at byte {exc.pos})",
                                    hint=_HINT_CORRUPT) from None
    except bounded_json.JsonLimitError as exc:
        where = _where(exc.path)
        raise CheckpointFormatError(f"{path}: the header is refused{where}: {exc.reason}", stricter=exc.stricter,
                                    hint=_HINT_CORRUPT if exc.stricter is None else "re-export the checkpoint") from None


def _where(keys: tuple) -> str:
    if not keys:
        return ""
    head = "__metadata__" if keys[0] == "__metadata__" else f"tensor {brief(keys[0])}"
    return " at " + " ".join([head, *(brief(k) for k in keys[1:4])]) + (" ..." if len(keys) > 4 else "")


def _refuse_duplicates(path: Path, obj: dict, what: str, library_refuses=lambda key: False, among=None) -> None:
    duplicates = [k for k in getattr(obj, "duplicates", ()) if among is None or k in among]
    if duplicates:
        key = duplicates[0]
        raise CheckpointFormatError(f"{path}: {what} {brief(key)} appears twice in the header",
                                    stricter=None if library_refuses(key) else "duplicate-key",
                                    hint="the file was written by a broken tool; re-export it")


def _check_metadata(path: Path, metadata: object) -> None:
    if metadata is None:
        return
    if type(metadata) is not bounded_json.JsonObject or not all(type(v) is str for v in metadata.values()):
        raise CheckpointFormatError(f"{path}: __metadata__ must map strings to strings, not {brief(metadata)}",
                                    hint=_HINT_CORRUPT)
    _refuse_duplicates(path, metadata, "__metadata__ key")


_FIELDS = {"dtype", "shape", "data_offsets"}
Fail = Callable[..., NoReturn]  # raises CheckpointFormatError naming the file and tensor


def _tensor_info(path: Path, name: str, entry: object, data_start: int, data_len: int) -> TensorInfo:
    def fail(detail: str, hint: str = _HINT_CORRUPT, stricter: str | None = None) -> NoReturn:  # the message is built only on error
        raise CheckpointFormatError(f"{path}: tensor {brief(name)}: {detail}", hint=hint, stricter=stricter)

    if type(entry) is list:  # serde's sequence form of a struct, read when it has the three fields in order
        fail(f"an array {brief(entry)} where an object with dtype, shape and data_offsets belongs",
             stricter="tensor-as-array" if len(entry) == 3 else None)
    if type(entry) is not bounded_json.JsonObject or not _FIELDS <= entry.keys():
        fail(f"entry must be an object with dtype, shape and data_offsets, not {brief(entry)}")
    if entry.duplicates:  # serde refuses a known field given twice and ignores unknown ones, repeated or not
        _refuse_duplicates(path, entry, f"tensor {brief(name)}: field", library_refuses=lambda key: True, among=_FIELDS)
    if len(entry) > len(_FIELDS):  # ignored fields, but serde_json still reads them: 127 levels in all
        _check_ignored(fail, entry)
    dtype = _dtype(fail, entry["dtype"])
    shape = _integers(fail, "shape", entry["shape"])
    offsets = _integers(fail, "data_offsets", entry["data_offsets"])
    if len(offsets) != 2:
        fail(f"data_offsets {brief(offsets)} is not a pair of integers")
    begin, end = offsets
    if not 0 <= begin <= end <= data_len:
        fail(f"data_offsets [{begin}, {end}] out of range of the {data_len} data bytes",
             hint="the file is truncated or its header is corrupt")
    expected = _nbytes(fail, dtype, shape)
    if end - begin != expected:
        fail(f"{end - begin} bytes but shape {brief(shape)} x {dtype} needs {expected}", hint="the header is corrupt")
    return TensorInfo(name, dtype, tuple(shape), path, data_start + begin, end - begin)


def _check_ignored(fail: Fail, entry: dict) -> None:
    """The fields the library ignores: any JSON, within serde_json's depth (the top object and this
    entry are two of its levels). The known fields need no such walk: their types bound their depth."""
    for key, value in entry.items():
        if key not in _FIELDS:
            try:
                bounded_json.check_value(value, bounded_json.MAX_DEPTH - 2)
            except bounded_json.JsonLimitError as exc:
                fail(f"field {brief(key)}: {exc.reason}", stricter=exc.stricter)


def _dtype(fail: Fail, dtype: object) -> str:
    if type(dtype) is bounded_json.JsonObject:  # serde's map form of an enum: {"F32": null}
        readable = len(dtype) == 1 and next(iter(dtype)) in DTYPE_BITS and next(iter(dtype.values())) is None
        fail(f"dtype {brief(dtype)} is an object, not a dtype name such as \"F32\"",
             stricter="dtype-as-object" if readable else None)
    if type(dtype) is not str or dtype not in DTYPE_BITS:
        fail(f"unknown dtype {brief(dtype)} (known: {', '.join(sorted(DTYPE_BITS))})",
             hint="the file is corrupt or written by a newer format; re-export it")
    if dtype not in DTYPE_SIZES:
        fail(f"dtype {dtype} packs {DTYPE_BITS[dtype]}-bit elements into shared bytes, which compat does not copy",
             stricter="sub-byte-dtype", hint="convert this checkpoint with a tool that knows the packing")
    return dtype


def _integers(fail: Fail, field: str, value: object) -> list[int]:
    """A list of integers 0..2**64-1 (ints beyond 64 bits were parsed as floats, as serde_json parses them)."""
    if type(value) is not list or not all(type(d) is int and d >= 0 for d in value):
        fail(f"{field} {brief(value)} is not a list of non-negative integers")
    return value


def _nbytes(fail, dtype: str, shape: list[int]) -> int:
    """Elements x element size, refusing a 64-bit overflow at any step as the library does; each
    product stays below 2**128, so a 200,000-dimension shape costs 200,000 small multiplications."""
    elements = 1
    for dim in shape:
        elements *= dim
        if elements > bounded_json.U64_MAX:
            fail(f"shape {brief(shape)} has more than 2**64 elements", hint="the header is corrupt or crafted")
    bits = elements * DTYPE_BITS[dtype]
    if bits > bounded_json.U64_MAX:
        fail(f"shape {brief(shape)} x {dtype} is more than 2**64 bits", hint="the header is corrupt or crafted")
    return bits // 8


def _check_coverage(path: Path, tensors: list[TensorInfo], data_len: int, data_start: int) -> None:
    """Tensors (sorted by offset) must tile the data section: no overlap (aliasing) and no hidden gaps."""
    position = data_start
    for tensor in tensors:
        if tensor.offset < position:
            raise CheckpointFormatError(f"{path}: tensor {brief(tensor.name)} overlaps the tensor before it "
                                        f"(starts at data byte {tensor.offset - data_start}, previous ends at {position - data_start})",
                                        hint="the header is corrupt or crafted; re-export the checkpoint")
        if tensor.offset > position:
            raise CheckpointFormatError(f"{path}: {tensor.offset - position} unreferenced bytes before tensor {brief(tensor.name)}",
                                        hint="the header is corrupt; re-export the checkpoint")
        position = tensor.offset + tensor.nbytes
    if position != data_start + data_len:
        raise CheckpointFormatError(f"{path}: {data_start + data_len - position} bytes after the last tensor are not referenced",
                                    hint="the file has trailing garbage or a corrupt header")


# ---------------------------------------------------------------------------------------------
# Writing: a header the library reads, or a refusal before any byte is written


def encode_header(entries: list[tuple[str, str, tuple[int, ...], int]], metadata: dict[str, str] | None) -> bytes:
    """The 8-byte length and JSON header for (name, dtype, shape, nbytes) entries laid out in order,
    padded to 8 bytes as the library pads. Refuses (naming the key) what the library would not read
    back: text that is not UTF-8 encodable (lone surrogates), a name given twice, an unknown dtype."""
    header: dict[str, object] = {}
    if metadata:
        for key, value in metadata.items():
            _encodable("__metadata__ key", key)
            if not isinstance(value, str):
                raise CheckpointFormatError(f"__metadata__ {brief(key)}: {brief(value)} is not a string")
            _encodable(f"__metadata__ {brief(key)}: value", value)
        header["__metadata__"] = metadata
    position = 0
    for name, dtype, shape, nbytes in entries:
        _encodable("tensor name", name)
        if name in header:
            raise CheckpointFormatError(f"tensor name {brief(name)} would be written twice",
                                        hint="two source tensors map to the same output name")
        if dtype not in DTYPE_SIZES:
            raise CheckpointFormatError(f"tensor {brief(name)}: dtype {brief(dtype)} cannot be written")
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [position, position + nbytes]}
        position += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # keep tensor data 8-byte aligned, as the safetensors library does
    if len(raw) > MAX_HEADER_BYTES:
        raise CheckpointFormatError(f"the output header would be {len(raw):,} bytes, over the {MAX_HEADER_BYTES:,} "
                                    "compat reads back", hint="write fewer tensors per shard (--max-shard-size)")
    return struct.pack("<Q", len(raw)) + raw


def _encodable(what: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CheckpointFormatError(f"{what} {brief(text)} holds {brief(text[exc.start:exc.end])}, a lone surrogate: "
                                    "not text the safetensors library reads", hint="rename it to valid Unicode text") from None
