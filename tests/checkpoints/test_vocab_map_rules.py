"""compat/vocab_maps.py: the d2t/t2d rules, checked against a numpy oracle and on hand-made breakage."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat.vocab_maps import derive_missing, vocab_map_problems


@dataclass
class Map:
    dtype: str
    shape: tuple
    data: bytes

    def read(self) -> bytes:
        return self.data


def d2t_of(used: np.ndarray, dtype="<i8") -> Map:
    offsets = (np.asarray(used) - np.arange(len(used))).astype(dtype)
    return Map("I64" if dtype == "<i8" else "I32", (len(used),), offsets.tobytes())


def t2d_of(used, vocab: int, dtype=bool) -> Map:
    mask = np.zeros(vocab, dtype)
    mask[np.asarray(used, dtype=np.int64)] = 1
    return Map("BOOL" if dtype is bool else "U8", (vocab,), mask.tobytes())


def messages(*args) -> list[str]:
    return [p.message for p in vocab_map_problems(*args)]


@st.composite
def vocabularies(draw):
    vocab = draw(st.integers(2, 3000))
    draft = draw(st.integers(1, vocab))
    used = np.sort(np.random.default_rng(draw(st.integers(0, 2**32 - 1))).choice(vocab, draft, replace=False))
    return vocab, draft, used


@settings(max_examples=200, deadline=None)
@given(vocabularies(), st.sampled_from(["both", "d2t", "t2d"]), st.sampled_from(["<i8", "<i4"]))
def test_consistent_maps_pass_and_the_missing_one_is_derived_exactly(case, present, dtype):
    vocab, draft, used = case
    if draft < vocab and np.array_equal(used, np.arange(draft)):
        used = used + 1  # exactly the first `draft` tokens is the all-zero placeholder, refused by its own rule
    d2t, t2d = d2t_of(used, dtype), t2d_of(used, vocab)
    given_d2t, given_t2d = (d2t if present != "t2d" else None), (t2d if present != "d2t" else None)
    assert vocab_map_problems(draft, vocab, given_d2t, given_t2d) == []
    derived, notes = derive_missing(draft, vocab, given_d2t, given_t2d)
    assert notes == []
    if present == "both":
        assert derived == []
    elif present == "d2t":
        assert [(d.name, d.dtype, d.shape, d.data) for d in derived] == [("t2d", "BOOL", (vocab,), t2d.data)]
    else:
        assert [(d.name, d.dtype, d.shape, d.data) for d in derived] == [("d2t", "I64", (draft,), d2t_of(used).data)]


@settings(max_examples=200, deadline=None)
@given(vocabularies(), st.data())
def test_any_single_corruption_of_a_consistent_pair_is_caught(case, data):
    vocab, draft, used = case
    if draft < 2:
        return
    offsets = used - np.arange(draft)
    mask = np.zeros(vocab, np.uint8)
    mask[used] = 1
    what = data.draw(st.sampled_from(["d2t entry", "t2d flip", "t2d swap"]))
    if what == "d2t entry":
        i = data.draw(st.integers(0, draft - 1))
        offsets = offsets.copy()
        offsets[i] += data.draw(st.integers(-5, 5).filter(lambda x: x != 0))
    elif what == "t2d flip":
        mask[data.draw(st.integers(0, vocab - 1))] ^= 1
    else:
        on, off = np.flatnonzero(mask), np.flatnonzero(mask == 0)
        if not len(off):
            return
        mask[data.draw(st.sampled_from(list(on)))], mask[data.draw(st.sampled_from(list(off)))] = 0, 1
    d2t = Map("I64", (draft,), offsets.astype("<i8").tobytes())
    t2d = Map("BOOL", (vocab,), mask.tobytes())
    assert vocab_map_problems(draft, vocab, d2t, t2d) != []


def test_the_seed_case_zero_maps_are_refused_with_both_problems():
    """issue 9: d2t all zero, t2d all false, a 32000-token draft vocab over Kimi's 163840."""
    got = messages(32000, 163840, Map("I64", (32000,), bytes(8 * 32000)), Map("BOOL", (163840,), bytes(163840)))
    assert len(got) == 2 and "all zeros" in got[0] and "marks 0 target tokens" in got[1]


def test_full_vocab_identity_map_is_fine():
    assert messages(256, 256, Map("I64", (256,), bytes(8 * 256)), Map("BOOL", (256,), b"\x01" * 256)) == []


@pytest.mark.parametrize("args, needle", [
    ((128, 256, None, None), "neither d2t nor t2d"),
    ((128, 256, Map("F32", (128,), bytes(512)), None), "d2t has dtype F32"),
    ((128, 256, Map("I64", (64,), bytes(512)), None), "d2t has dtype I64 and shape [64]"),
    ((128, 256, None, Map("BOOL", (300,), bytes(300))), "t2d has 300 entries but vocab_size"),
    ((128, 256, None, Map("BOOL", (256, 1), bytes(256))), "expected a bool mask"),
    ((4, 256, None, Map("U8", (256,), b"\x02" + bytes(255))), "values other than 0/1"),
    ((3, 8, Map("I64", (3,), np.array([0, 5, 1], "<i8").tobytes()), None), "not strictly increasing"),
    ((3, 8, Map("I64", (3,), np.array([0, -1, 1], "<i8").tobytes()), None), "d2t[1] = -1 is negative"),
    ((3, 8, Map("I64", (3,), np.array([3, 5, 7], "<i8").tobytes()), None), "looks like absolute target ids"),
    ((3, 8, Map("I64", (3,), b"\x00" * 7), None), "bytes do not hold 3 I64 entries"),
])
def test_each_rule(args, needle):
    problems = vocab_map_problems(*args)
    assert problems and needle in problems[0].message + (problems[0].fix or ""), problems


def test_unknown_vocab_sizes_fall_back_to_the_maps():
    used = np.array([1, 4, 6])
    assert messages(None, None, d2t_of(used), t2d_of(used, 9)) == []
    assert messages(None, None, d2t_of(used), t2d_of([1, 4, 7], 9))  # still compared with each other
    derived, notes = derive_missing(3, None, d2t_of(used), None)
    assert derived == [] and notes == ["t2d: not derived (vocab_size unknown; pass --target)"]


def test_no_numpy_at_run_time():
    """issue 9 item 8: the rules run where numpy is not installed."""
    code = ("import sys; sys.modules['numpy'] = None\n"
            "from array import array\nfrom compat.vocab_maps import vocab_map_problems, derive_missing\n"
            "class M:\n    def __init__(s, d, shape, b): s.dtype, s.shape, s.b = d, shape, b\n    def read(s): return s.b\n"
            "d2t = M('I64', (3,), array('q', [1, 1, 2]).tobytes())\n"
            "print(vocab_map_problems(3, 10, d2t, None), derive_missing(3, 10, d2t, None)[0][0].data.hex())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]", "00010100010000000000"]
