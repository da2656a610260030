"""The streaming safetensors reader/writer: every malformed header is refused, bytes survive."""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from compat.core.errors import EXIT_REFUSED
from compat.safetensors_stream import (
    CheckpointFormatError, OutputTensor, bytes_source, convert_chunk, file_source, hash_tensor, parse_size,
    read_header, write_safetensors,
)


def raw_file(path, header, data: bytes = b"", header_len: int | None = None):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if header_len is None else header_len) + raw + data)
    return path


def test_reads_a_file_written_by_the_safetensors_library(tmp_path):
    arrays = {"b": np.arange(6, dtype=np.float32).reshape(2, 3), "a": np.ones(4, dtype=np.int64)}
    save_file(arrays, str(tmp_path / "x.safetensors"), metadata={"format": "pt"})
    header = read_header(tmp_path / "x.safetensors")
    assert header.metadata == {"format": "pt"}
    assert {n: (t.dtype, t.shape) for n, t in header.tensors.items()} == {"a": ("I64", (4,)), "b": ("F32", (2, 3))}
    blob = (tmp_path / "x.safetensors").read_bytes()
    b = header.tensors["b"]
    assert blob[b.offset:b.offset + b.nbytes] == arrays["b"].tobytes()


@pytest.mark.parametrize("case, header, data, header_len, message", [
    ("too short", None, b"", None, "too short"),
    ("header length beyond the file", {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4, 10_000, "beyond the end of the file"),
    ("not JSON", b"{not json", b"", None, "not valid JSON"),
    ("not an object", b"[1, 2]", b"", None, "not an object"),
    ("unknown dtype", {"a": {"dtype": "F17", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4, None, "unknown dtype 'F17'"),
    ("out of range", {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4, None, "out of range"),
    ("overlap", {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                 "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8, None, "overlaps"),
    ("gap", {"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8, None, "unreferenced bytes"),
    ("trailing bytes", {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 8, None, "not referenced"),
    ("shape vs bytes", {"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, None, "needs 12"),
    ("negative dim", {"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, b"\0" * 8, None, "non-negative"),
    ("bad metadata", {"__metadata__": {"k": 1}}, b"", None, "__metadata__"),
])
def test_malformed_headers_are_refused_with_the_reason(tmp_path, case, header, data, header_len, message):
    path = tmp_path / "bad.safetensors"
    if header is None:
        path.write_bytes(b"\x01\x02")
    else:
        raw_file(path, header, data, header_len)
    with pytest.raises(CheckpointFormatError, match=message) as info:
        read_header(path)
    assert str(path) in str(info.value)
    assert info.value.exit_code == EXIT_REFUSED


def test_duplicate_tensor_names_are_refused(tmp_path):
    entry = '{"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}'
    path = raw_file(tmp_path / "dup.safetensors", f'{{"a": {entry}, "a": {entry}}}'.encode(), b"\0" * 4)
    with pytest.raises(CheckpointFormatError, match="'a' appears twice"):
        read_header(path)


def test_write_renames_and_copies_bytes_identically(tmp_path):
    arrays = {"x": np.random.default_rng(0).standard_normal((33, 17)).astype(np.float16), "y": np.arange(5, dtype=np.int64)}
    save_file(arrays, str(tmp_path / "in.safetensors"))
    header = read_header(tmp_path / "in.safetensors")
    outputs = [OutputTensor("renamed.y", file_source(header.tensors["y"]), "I64"),
               OutputTensor("renamed.x", file_source(header.tensors["x"]), "F16")]
    written = write_safetensors(tmp_path / "out.safetensors", outputs, {"format": "pt"})
    loaded = load_file(str(tmp_path / "out.safetensors"))
    assert list(read_header(tmp_path / "out.safetensors").tensors) == ["renamed.y", "renamed.x"]
    assert loaded["renamed.x"].tobytes() == arrays["x"].tobytes() and loaded["renamed.y"].tobytes() == arrays["y"].tobytes()
    assert [(w.name, w.mismatch, w.digest) for w in written] == [("renamed.y", None, None), ("renamed.x", None, None)]


@pytest.mark.parametrize("algorithm", ["crc32", "sha256"])
def test_checksum_recorded_only_when_asked_for(tmp_path, algorithm):
    save_file({"x": np.arange(1000, dtype=np.float32)}, str(tmp_path / "in.safetensors"))
    header = read_header(tmp_path / "in.safetensors")
    [w] = write_safetensors(tmp_path / "out.safetensors", [OutputTensor("x", file_source(header.tensors["x"]), "F32")],
                            None, checksum=algorithm)
    assert w.mismatch is None
    assert w.digest == hash_tensor(header.tensors["x"], algorithm) == hash_tensor(
        read_header(tmp_path / "out.safetensors").tensors["x"], algorithm)


def test_a_flipped_byte_is_found_in_any_piece(tmp_path, monkeypatch):
    import compat.safetensors_stream as stream

    monkeypatch.setattr(stream, "COPY_RANGE_BYTES", 1000)
    monkeypatch.setattr(stream, "VERIFY_CHUNK_BYTES", 300)  # pieces split into several compared chunks, ragged ends
    data = np.random.default_rng(3).integers(0, 255, size=5_555, dtype=np.uint8)
    save_file({"t": data}, str(tmp_path / "in.safetensors"))
    info = read_header(tmp_path / "in.safetensors").tensors["t"]
    real = stream._copy_range

    def corrupting(source, out, on_bytes):
        def flip_then_report(n):
            if copied[0] <= target < copied[0] + n:
                position = out.tell() - (copied[0] + n - target)
                os.pwrite(out.fileno(), bytes([data[target] ^ 0x80]), position)
            copied[0] += n
            on_bytes(n)

        real(source, out, flip_then_report)

    for target in (0, 999, 1000, 4321, 5554):
        copied = [0]
        monkeypatch.setattr(stream, "_copy_range", corrupting)
        out = tmp_path / f"out-{target}.safetensors"
        [w] = write_safetensors(out, [OutputTensor("t", file_source(info), "U8")], None, checksum="crc32")
        assert w.mismatch == f"byte {target} of 5555 read back from the output is 0x{data[target] ^ 0x80:02x}, the source has 0x{data[target]:02x}"
        assert w.digest is None  # no checksum recorded for bytes that failed verification


def test_large_tensor_spans_many_chunks(tmp_path, monkeypatch):
    import compat.safetensors_stream as stream

    monkeypatch.setattr(stream, "COPY_RANGE_BYTES", 1000)  # many chunks and a ragged last one
    monkeypatch.setattr(stream, "VERIFY_CHUNK_BYTES", 999)
    data = np.random.default_rng(1).integers(0, 255, size=12_345, dtype=np.uint8)
    save_file({"t": data}, str(tmp_path / "in.safetensors"))
    info = read_header(tmp_path / "in.safetensors").tensors["t"]
    [w] = write_safetensors(tmp_path / "out.safetensors", [OutputTensor("t", file_source(info), "U8")], None)
    assert w.mismatch is None
    assert load_file(str(tmp_path / "out.safetensors"))["t"].tobytes() == data.tobytes()


def test_dtype_conversion_matches_torch_rounding(tmp_path, torch):
    values = np.concatenate([np.random.default_rng(2).standard_normal(1001).astype(np.float32),
                             np.array([0.0, -0.0, np.inf, -np.inf, 1e-40, 3.0e38], dtype=np.float32)])
    as_bf16 = convert_chunk(memoryview(values.tobytes()), "F32", "BF16")
    expected = torch.from_numpy(values).to(torch.bfloat16).view(torch.int16).numpy().tobytes()
    assert as_bf16 == expected
    back = np.frombuffer(convert_chunk(memoryview(as_bf16), "BF16", "F32"), dtype=np.float32)
    assert np.array_equal(back, torch.from_numpy(values).to(torch.bfloat16).to(torch.float32).numpy())
    nan = np.frombuffer(convert_chunk(memoryview(np.array([np.nan], np.float32).tobytes()), "F32", "BF16"), np.uint16)
    assert (nan[0] & 0x7F80) == 0x7F80 and (nan[0] & 0x7F) != 0  # still a NaN


def test_converted_tensor_is_verified_against_the_conversion(tmp_path, monkeypatch):
    import compat.safetensors_stream as stream
    import compat.safetensors_stream.source as sources

    monkeypatch.setattr(sources, "CHUNK_BYTES", 6)  # chunk boundaries that split elements (bytes_source reads it)
    values = np.arange(10, dtype=np.float32)
    source = bytes_source("F32", (10,), values.tobytes(), "mem")
    [w] = write_safetensors(tmp_path / "o.safetensors", [OutputTensor("v", source, "F16")], None)
    out = load_file(str(tmp_path / "o.safetensors"))["v"]
    assert out.dtype == np.float16 and np.array_equal(out.astype(np.float32), values)
    assert w.mismatch is None

    real = stream._write_all
    def corrupting(out, data):  # the second converted chunk reaches the disk with a flipped byte
        calls.append(len(data))
        if len(calls) == 3:
            data = bytes([data[0] ^ 1]) + bytes(data[1:])
        real(out, data)

    calls = []
    monkeypatch.setattr(stream, "_write_all", corrupting)
    [w] = write_safetensors(tmp_path / "p.safetensors", [OutputTensor("v", source, "F16")], None)
    assert w.mismatch is not None and w.mismatch.startswith("byte 2 of 20 read back")  # header, chunk of 1 element, this


def test_parse_size():
    assert parse_size("5GB") == 5 * 10**9 and parse_size("2GiB") == 2 * 2**30 and parse_size("100") == 100
    with pytest.raises(ValueError, match=r"^not a size: 'lots' \(examples: 5GB, 500MB, 2GiB\)$"):
        parse_size("lots")


# Every public name of compat/safetensors_stream.py before it became a package, and the seams the
# tests and bench/bench_convert.py set on it: all still attributes of compat.safetensors_stream.
BEFORE_THE_SPLIT = [
    "CHECKSUM", "CHECKSUMS", "CHUNK_BYTES", "COPY_CHUNK_BYTES", "COPY_RANGE_BYTES", "CheckpointFormatError", "DTYPE_NAMES",
    "DTYPE_SIZES", "FLOAT_DTYPES", "HASH_CHUNK_BYTES", "MAX_HEADER_BYTES", "OutputTensor", "SafetensorsHeader", "TensorInfo",
    "TensorSource", "VERIFY_CHUNK_BYTES", "WRITEBACK_BYTES", "WrittenTensor", "build_header", "bytes_source", "convert_chunk",
    "file_source", "hash_range", "hash_tensor", "new_checksum", "output_nbytes", "parse_size", "read_header", "read_range",
    "read_tensor_bytes", "write_safetensors",
    "_Check", "_copy_range", "_start_writeback", "_write_all",
]


def test_the_package_keeps_every_name_of_the_module():
    import compat.safetensors_stream as stream

    assert [name for name in BEFORE_THE_SPLIT if not hasattr(stream, name)] == []
    assert set(stream.__all__) <= set(dir(stream))


def test_the_package_imports_nothing_beyond_the_standard_library(tmp_path):
    import subprocess
    import sys

    code = ("import sys; import compat.safetensors_stream; "
            "print(sorted(m for m in ('numpy', 'torch', 'safetensors') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"  # a plain `pip install .` reads and writes safetensors
