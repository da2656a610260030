"""Property-based fuzz of the safetensors header reader, with the safetensors library as the oracle.

Valid headers (random tensors, dtypes, shapes, layouts, metadata) are mutated: byte flips, JSON
structure, huge numbers, deep nesting, wrong types, huge shapes, duplicate keys, offsets, lone
surrogates, the length field (tests/checkpoints/header_mutations.py). For every file, read_header
answers with a header or a CheckpointFormatError (one line, naming the file), and it accepts exactly
what the library's safe_open accepts, reading the same tensors and metadata, except where it refuses
for a reason documented in STRICTER. 2,000 examples in the normal run, 10,000 with COMPAT_STRESS=1.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from compat.safetensors_stream import OutputTensor, file_source, read_header, write_safetensors
from compat.safetensors_stream.header import CheckpointFormatError
from header_mutations import differential, library_view, mutated_file, valid_file

# no deadline (a loaded CI machine is not a hang; bench/bench_hostile.py times the reader), no example
# database in the tree; a failure prints the @reproduce_failure blob that replays it
FUZZ = settings(deadline=None, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def agrees_with_the_library(blob: bytes, path) -> None:
    path.write_bytes(blob)
    problem, outcome = differential(path)
    event(outcome)  # pytest --hypothesis-show-statistics: how often each way
    assert problem is None, problem


@settings(FUZZ, max_examples=2000)
@given(rng=st.randoms(use_true_random=False))
def test_mutated_headers_are_read_as_the_library_reads_them(rng, workdir):
    agrees_with_the_library(mutated_file(rng), workdir / "fuzz.safetensors")


@pytest.mark.stress
@settings(FUZZ, max_examples=10_000)
@given(rng=st.randoms(use_true_random=False))
def test_mutated_headers_are_read_as_the_library_reads_them_stress(rng, workdir):
    agrees_with_the_library(mutated_file(rng), workdir / "fuzz-stress.safetensors")


@settings(FUZZ, max_examples=300)
@given(rng=st.randoms(use_true_random=False))
def test_what_is_read_is_rewritten_into_a_file_the_library_reads(rng, workdir):
    """Nothing is written that the library would refuse: each accepted header, rewritten with its
    tensors and metadata, reads back in the library and in compat with the same tensors."""
    src, out = workdir / "in.safetensors", workdir / "out.safetensors"
    src.write_bytes(mutated_file(rng) if rng.random() < 0.5 else _valid(rng))
    try:
        header = read_header(src)
    except CheckpointFormatError:
        return
    out.unlink(missing_ok=True)
    outputs = [OutputTensor(name, file_source(info), info.dtype) for name, info in header.tensors.items()]
    written = write_safetensors(out, outputs, header.metadata)
    assert all(w.mismatch is None for w in written)
    assert library_view(out) == library_view(src) is not None
    assert differential(out) == (None, "both read")
    assert out.read_bytes()[read_header(out).data_start:] == src.read_bytes()[header.data_start:]


def _valid(rng: random.Random) -> bytes:
    from header_mutations import emit, file_bytes

    tree, data = valid_file(rng)
    return file_bytes(emit(tree, rng), data)
