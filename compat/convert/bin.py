"""pytorch_model.bin drafters: checked from the file's own structure, then loaded with weights_only=True.

Order of work, so that a hostile file costs neither safety nor memory:
1. the pickle is scanned (pickle_scan.py: no import, no execution) and refused with the global it
   calls when it holds anything but tensors;
2. every tensor's storage is checked against the file: the storage record exists and holds at least
   what the pickle claims (zip format), or the legacy format's size headers agree with the claims and
   the whole fits in MEMORY_CAP (that format is read into memory);
3. every tensor's offset, size and stride must address only its storage and each element once
   (dense, non-overlapping: a stride-0 `expand` is refused), so no tensor is larger than its bytes;
4. only then torch.load(weights_only=True, mmap=True) builds the tensors; contiguous ones are used
   in place (a memoryview of the mapped file, no copy), others are copied, at most MEMORY_CAP in all.

torch is imported only here (the `torch` extra); numpy is never needed.
"""

from __future__ import annotations

import ctypes
import io
import math
import os
import zipfile
from pathlib import Path

from compat.core.errors import RefusedError
from compat.core.files import refuse_os_error

from . import pickle_scan
from .pickle_scan import ScanError, TensorRecord

MEMORY_CAP = 256 * 1024 * 1024  # bytes a .bin may make us hold in memory (copies, the legacy format)
MAX_PICKLE_BYTES = 16 * 1024 * 1024  # a drafter's pickle is a few KB (about 150 bytes a tensor)
ZIP_MAGIC = b"PK\x03\x04"
RESAVE = ("re-save it with torch.save(model.state_dict()) (zip format, contiguous tensors), "
          "or convert it to safetensors in a sandbox you trust")


def read_bin(path: Path) -> list[tuple[str, str, tuple[int, ...], memoryview, object]]:
    """[(name, safetensors dtype, shape, bytes, keepalive)] of a pytorch_model.bin at `path` (a checked real path)."""
    records = _checked_records(path)
    try:
        import torch
    except ImportError:
        raise RefusedError(f"{path}: reading a pickle checkpoint needs torch", hint="pip install torch (CPU build is enough)") from None
    state = _torch_load(torch, path)
    if not isinstance(state, dict) or list(state) != [r.name for r in records] or \
            not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise RefusedError(f"{path}: torch.load built something other than the {len(records)} tensors the pickle describes",
                           hint=RESAVE)
    out, copied = [], 0
    for record in records:
        tensor = state[record.name]
        if tuple(tensor.shape) != record.size or tensor.stride() != record.stride:
            raise RefusedError(f"{path}: tensor {record.name!r} loaded as {list(tensor.shape)}, the pickle says {list(record.size)}")
        nbytes = math.prod(record.size) * record.storage.element_size
        if not tensor.is_contiguous():
            copied += nbytes
            if copied > MEMORY_CAP:
                raise RefusedError(f"{path}: its non-contiguous tensors need more than {MEMORY_CAP >> 20} MiB of copies "
                                   f"(at {record.name!r})", hint=RESAVE)
            tensor = tensor.contiguous()
        out.append((record.name, record.storage.dtype, record.size, _bytes_of(tensor, nbytes), tensor))
    return out


def _torch_load(torch, path: Path):
    import pickle

    try:
        try:
            return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:
            if "mmap" not in str(exc) and "zip" not in str(exc):
                raise
            return torch.load(path, map_location="cpu", weights_only=True)  # legacy (non-zip) format: no mmap
    except pickle.UnpicklingError as exc:
        lines = [line for line in str(exc).splitlines() if "GLOBAL" in line or "global" in line] or str(exc).strip().splitlines()[-1:]
        raise RefusedError(f"{path}: the pickle holds more than plain tensors, refused by torch.load(weights_only=True): "
                           f"{(lines[0] if lines else 'unsupported object').strip()}", hint=RESAVE) from None
    except OSError as exc:
        raise refuse_os_error(exc, path, "reading pytorch_model.bin") from None
    except Exception as exc:  # torch's own errors for a file our checks let through
        raise RefusedError(f"{path}: cannot be read as a torch checkpoint ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})",
                           hint="the file is truncated or corrupt; download it again") from None


def _bytes_of(tensor, nbytes: int) -> memoryview:
    """The tensor's bytes in place (no numpy): a ctypes view of its memory that owns the tensor, so
    the mapping stays valid for as long as any view of the bytes exists."""
    if nbytes == 0:
        return memoryview(b"")
    window = (ctypes.c_char * nbytes).from_address(tensor.data_ptr())
    setattr(window, "owner", tensor)  # an attribute of our own on the ctypes array: it keeps the tensor alive
    return memoryview(window).cast("B")


# ---------------------------------------------------------------------------------------------
# The structural checks, before torch


def _checked_records(path: Path) -> list[TensorRecord]:
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
            if magic == ZIP_MAGIC:
                records, storage_bytes = _zip_records(path, f)
            else:
                records, storage_bytes = _legacy_records(path, f)
    except ScanError as exc:
        raise _refusal(path, str(exc)) from None
    except zipfile.BadZipFile as exc:
        raise RefusedError(f"{path}: cannot be read as a torch checkpoint (a damaged zip: {exc})",
                           hint="the file is truncated or corrupt; download it again") from None
    except OSError as exc:
        raise refuse_os_error(exc, path, "reading pytorch_model.bin") from None
    for record in records:
        _check_geometry(path, record, storage_bytes[record.storage.key])
    return records


def _refusal(path: Path, reason: str) -> RefusedError:
    if reason.startswith("the pickle is malformed") or "truncated" in reason:
        return RefusedError(f"{path}: cannot be read as a torch checkpoint ({reason})", hint="the file is truncated or corrupt; download it again")
    if reason.startswith(("holds ", "tensor ")):
        return RefusedError(f"{path}: {reason}", hint="pass a plain state dict (name -> tensor)")
    return RefusedError(f"{path}: the pickle holds more than plain tensors: {reason}", hint=RESAVE)


def _tensors(path: Path, top) -> list[TensorRecord]:
    pairs = pickle_scan.state_dict_tensors(top)
    others = [(k, v) for k, v in pairs if not isinstance(v, TensorRecord) or not isinstance(k, str)]
    if others:
        key, value = others[0]
        what = f"a reference to {value}" if isinstance(value, pickle_scan.Global) else type(value).__name__
        raise ScanError(f"holds {what} under {key!r}, not only tensors")
    return [v for _, v in pairs if isinstance(v, TensorRecord)]  # all of them (the others were refused)


def _zip_records(path: Path, f) -> tuple[list[TensorRecord], dict[str, int]]:
    f.seek(0)
    archive = zipfile.ZipFile(f)
    pickles = [i for i in archive.infolist() if i.filename.endswith("/data.pkl") and i.filename.count("/") == 1]
    if len(pickles) != 1:
        raise ScanError("the pickle is malformed (no single <archive>/data.pkl in the zip)")
    prefix = pickles[0].filename[: -len("data.pkl")]
    with archive.open(pickles[0]) as stream:
        data = stream.read(MAX_PICKLE_BYTES + 1)
    if len(data) > MAX_PICKLE_BYTES:
        raise ScanError(f"its pickle is over {MAX_PICKLE_BYTES >> 20} MiB: not a drafter's state dict")
    records = _tensors(path, pickle_scan.scan(data))
    entries = {i.filename: i for i in archive.infolist()}
    available = {}
    for record in records:
        storage = record.storage
        entry = entries.get(f"{prefix}data/{storage.key}")
        if entry is None:
            raise ScanError(f"tensor {record.name!r}: its storage {storage.key!r} is not in the file (truncated)")
        if entry.compress_type != zipfile.ZIP_STORED:
            raise ScanError(f"tensor {record.name!r}: its storage is compressed, which torch.save never writes")
        claimed = storage.numel * storage.element_size
        if claimed > entry.file_size:
            raise ScanError(f"tensor {record.name!r}: its storage claims {claimed} bytes, the file holds {entry.file_size}")
        available[storage.key] = storage.numel
    return records, available


def _legacy_records(path: Path, f) -> tuple[list[TensorRecord], dict[str, int]]:
    size = os.fstat(f.fileno()).st_size
    f.seek(0)
    head = io.BytesIO(f.read(min(size, MAX_PICKLE_BYTES)))
    for _ in range(3):  # magic number, protocol version, system info
        pickle_scan.scan(head)
    records = _tensors(path, pickle_scan.scan(head))
    keys = pickle_scan.scan(head)
    if not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
        raise ScanError("the pickle is malformed (no storage key list after the state dict)")
    claims = {r.storage.key: r.storage for r in records}
    position, total = head.tell(), 0
    for key in keys:  # each storage: its element count (int64), then its bytes
        f.seek(position)
        header = f.read(8)
        storage = claims.get(key)
        if len(header) < 8:
            raise ScanError(f"storage {key!r} is missing (the file is truncated)")
        numel = int.from_bytes(header, "little", signed=True)
        if storage is not None and numel != storage.numel:
            raise ScanError(f"tensor storage {key!r}: the pickle claims {storage.numel} elements, the file holds {numel}")
        element = storage.element_size if storage else 1
        position += 8 + max(numel, 0) * element
        total += max(numel, 0) * element
        if position > size:
            raise ScanError(f"storage {key!r} runs beyond the end of the file (truncated)")
    missing = sorted(set(claims) - set(keys))
    if missing:
        raise ScanError(f"storage {missing[0]!r} is missing (the file is truncated)")
    if total > MEMORY_CAP:
        raise RefusedError(f"{path}: the legacy (pre-zip) torch format is read whole into memory and this one holds "
                           f"{total >> 20} MiB, over the {MEMORY_CAP >> 20} MiB cap", hint=RESAVE)
    return records, {key: s.numel for key, s in claims.items()}


def _check_geometry(path: Path, record: TensorRecord, storage_numel: int) -> None:
    """The tensor addresses only its storage, each element once (dense and non-overlapping)."""
    size, stride, offset = record.size, record.stride, record.offset
    where = f"{path}: tensor {record.name!r} (size {list(size)}, stride {list(stride)}, offset {offset})"
    if any(s < 0 for s in size) or any(s < 0 for s in stride) or offset < 0:
        raise RefusedError(f"{where}: negative size, stride or offset", hint=RESAVE)
    numel = math.prod(size)
    if numel == 0:
        return
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= storage_numel:
        raise RefusedError(f"{where}: reaches element {last} of a storage of {storage_numel}", hint="the file is corrupt or hostile")
    expected = 1
    for n, s in sorted(((n, s) for n, s in zip(size, stride) if n != 1), key=lambda d: d[1]):
        if s != expected:
            raise RefusedError(f"{where}: addresses its {storage_numel}-element storage {numel} times with overlapping or "
                               f"zero strides (an expand or as_strided view): materialising it would take "
                               f"{numel * record.storage.element_size} bytes", hint=RESAVE)
        expected *= n
