"""The vocab-map rules of an EAGLE-3 drafter with a reduced draft vocabulary, in one place.

`d2t[i]` is an offset: draft token i is target token `i + d2t[i]` (SpecForge and the engines build it as
`sorted(used)[i] - i`); `t2d` is a 0/1 mask over the target vocabulary marking the tokens the draft
vocabulary holds. The rules (convert refuses on the first problem, doctor lists them all):

- d2t: int64 (or int32) of shape [draft_vocab_size]; offsets non-negative; target ids strictly
  increasing and inside the target vocabulary; not all zero when the draft vocabulary is smaller
  than the target's (an all-zero map sends draft token i to target token i: an untrained placeholder);
- t2d: bool (or uint8) of shape [vocab_size]; only 0 and 1; exactly draft_vocab_size marks; the marked
  tokens are d2t's target ids;
- a draft vocabulary smaller than the target's needs at least one of the two.

Pure Python on purpose (array, bytes, int.from_bytes): a plain `pip install .` has no numpy. The maps
are small (a 163840-entry t2d and a 32000-entry d2t are 420 KB) and are read whole; the limits below
bound that memory whatever a header claims. `python bench/bench_vocab_maps.py` times the checks.
"""

from __future__ import annotations

import operator
import sys
from array import array
from dataclasses import dataclass
from itertools import compress
from typing import Protocol

CONVENTION = "d2t holds offsets: target_id = draft_id + d2t[draft_id] (built as sorted(used)[i] - i)"
D2T_DTYPES = {"I64": ("q", 8), "I32": ("i", 4)}
T2D_DTYPES = ("BOOL", "U8")
MAX_VOCAB = 1 << 22  # 4M tokens, 16x the largest tokenizer in use: bounds the bytes read (t2d 4 MB, d2t 32 MB)


class MapTensor(Protocol):
    """A d2t or t2d tensor: safetensors dtype name, shape, and its raw little-endian bytes."""

    dtype: str
    shape: tuple[int, ...]

    def read(self) -> bytes: ...


@dataclass(frozen=True)
class Problem:
    message: str
    fix: str | None = None


@dataclass(frozen=True)
class DerivedMap:
    """A map convert writes because the source lacks it (derived from the other one)."""

    name: str  # "d2t" | "t2d"
    dtype: str
    shape: tuple[int, ...]
    data: bytes
    note: str


def vocab_map_problems(draft_vocab_size: int | None, vocab_size: int | None,
                       d2t: MapTensor | None, t2d: MapTensor | None) -> list[Problem]:
    """Every broken rule, most fundamental first. vocab_size None: t2d's length stands for it;
    draft_vocab_size None: d2t's length does."""
    problems: list[Problem] = []
    shaped_t2d = t2d if t2d is not None and _check_t2d_shape(t2d, vocab_size, problems) else None
    vocab = vocab_size if vocab_size is not None else (shaped_t2d.shape[0] if shaped_t2d is not None else None)
    draft = draft_vocab_size if draft_vocab_size is not None else (d2t.shape[0] if d2t is not None and len(d2t.shape) == 1 else None)
    if d2t is None and t2d is None:
        if draft is not None and vocab is not None and draft < vocab:
            problems.append(Problem(f"draft_vocab_size {draft} < vocab_size {vocab} but the checkpoint has neither d2t nor t2d: "
                                    "the engines would take draft ids for target ids and draft the wrong tokens",
                                    "copy d2t/t2d from the training run that produced lm_head"))
        return problems
    targets = _d2t_targets(d2t, draft, vocab, problems) if d2t is not None else None
    if shaped_t2d is not None:
        mask = shaped_t2d.read()
        if _t2d_valid(mask, shaped_t2d.shape[0], draft, problems) and targets is not None and not _marks_exactly(mask, targets):
            marked = _marks(mask)
            i = next(i for i, (a, b) in enumerate(zip(targets, marked)) if a != b)
            problems.append(Problem(f"d2t and t2d disagree at draft id {i}: d2t gives target {targets[i]}, "
                                    f"t2d's {i}-th marked token is {marked[i]}; {CONVENTION}",
                                    "keep the pair from the same training run"))
    return problems


def derive_missing(draft_vocab_size: int | None, vocab_size: int | None,
                   d2t: MapTensor | None, t2d: MapTensor | None) -> tuple[list[DerivedMap], list[str]]:
    """The map a consistent pair lacks (d2t from t2d, t2d from d2t), and notes on what was not derived.
    Call only when vocab_map_problems found nothing."""
    if d2t is None:
        if t2d is None:
            return [], []
        marked = _marks(t2d.read())
        offsets = array("q", (t - i for i, t in enumerate(marked)))
        return [DerivedMap("d2t", "I64", (len(marked),), _little_endian(offsets), f"d2t: derived from t2d (offsets, {len(marked)} entries)")], []
    if t2d is not None:
        return [], []
    vocab = vocab_size
    if vocab is None:
        return [], ["t2d: not derived (vocab_size unknown; pass --target)"]
    d2t_offsets = _offsets(d2t)
    assert d2t_offsets is not None, "vocab_map_problems reports a d2t of the wrong length"
    targets = _targets(d2t_offsets)
    mask = bytearray(vocab)
    for t in targets:
        mask[t] = 1
    return [DerivedMap("t2d", "BOOL", (vocab,), bytes(mask), f"t2d: derived from d2t ({vocab} entries, {len(targets)} true)")], []


# ---------------------------------------------------------------------------------------------


def _check_t2d_shape(t2d: MapTensor, vocab_size: int | None, problems: list[Problem]) -> bool:
    if t2d.dtype not in T2D_DTYPES or len(t2d.shape) != 1:
        problems.append(Problem(f"t2d has dtype {t2d.dtype} and shape {list(t2d.shape)}; expected a bool mask [target vocab]"))
        return False
    if t2d.shape[0] > MAX_VOCAB:
        problems.append(Problem(f"t2d has {t2d.shape[0]} entries, more than any vocabulary ({MAX_VOCAB}): not read"))
        return False
    if vocab_size is not None and t2d.shape[0] != vocab_size:
        problems.append(Problem(f"t2d has {t2d.shape[0]} entries but vocab_size (the target vocabulary) is {vocab_size}",
                                "t2d belongs to another vocabulary, or vocab_size in config.json is wrong"))
        return False
    return True


def _d2t_targets(d2t: MapTensor, draft: int | None, vocab: int | None, problems: list[Problem]) -> list[int] | None:
    if d2t.dtype not in D2T_DTYPES or len(d2t.shape) != 1 or (draft is not None and d2t.shape != (draft,)):
        problems.append(Problem(f"d2t has dtype {d2t.dtype} and shape {list(d2t.shape)}; expected int64 [draft_vocab_size {draft}]",
                                CONVENTION))
        return None
    if d2t.shape[0] > MAX_VOCAB:
        problems.append(Problem(f"d2t has {d2t.shape[0]} entries, more than any vocabulary ({MAX_VOCAB}): not read"))
        return None
    offsets = _offsets(d2t)
    if offsets is None:
        problems.append(Problem(f"d2t: its bytes do not hold {d2t.shape[0]} {d2t.dtype} entries", "the file is corrupt; export it again"))
        return None
    n = len(offsets)
    if n and min(offsets) < 0:
        i = next(i for i, v in enumerate(offsets) if v < 0)
        problems.append(Problem(f"d2t[{i}] = {offsets[i]} is negative; {CONVENTION}, so it is non-negative and non-decreasing",
                                "the map is corrupt or from another tool"))
        return None
    # target ids i + d2t[i] strictly increase exactly when the offsets never decrease
    if n > 1 and offsets != sorted(offsets):
        i = next(i for i in range(n - 1) if offsets[i + 1] < offsets[i])
        problems.append(Problem(f"d2t maps draft ids {i} and {i + 1} to target ids {i + offsets[i]} and {i + 1 + offsets[i + 1]}: "
                                f"not strictly increasing; {CONVENTION}",
                                "if d2t holds absolute target ids, convert it with d2t - arange(draft_vocab_size)"))
        return None
    if vocab is not None and n and n - 1 + offsets[-1] >= vocab:
        strictly = all(map(operator.lt, offsets, offsets[1:])) and offsets[-1] < vocab
        problems.append(Problem(f"d2t maps draft id {n - 1} to target id {n - 1 + offsets[-1]}, beyond vocab_size {vocab}; {CONVENTION}",
                                "d2t looks like absolute target ids: store d2t - arange(draft_vocab_size)" if strictly
                                else "the map belongs to another vocabulary"))
        return None
    if vocab is not None and n < vocab and n and offsets[-1] == 0:  # non-decreasing and non-negative: all zero
        problems.append(Problem(f"d2t is all zeros with a draft vocabulary of {n} < the target's {vocab}: it sends draft token i "
                                f"to target token i, which is an untrained placeholder, not a vocabulary mapping",
                                "copy d2t/t2d from the training run that produced lm_head (its vocab mapping file)"))
        return None
    return _targets(offsets)


def _t2d_valid(mask: bytes, entries: int, draft: int | None, problems: list[Problem]) -> bool:
    if len(mask) != entries:
        problems.append(Problem(f"t2d: {len(mask)} bytes for {entries} entries", "the file is corrupt; export it again"))
        return False
    if mask.translate(None, b"\x00\x01"):
        problems.append(Problem("t2d holds values other than 0/1; it must be a bool mask over the target vocabulary"))
        return False
    count = mask.count(1)
    if draft is not None and count != draft:
        problems.append(Problem(f"t2d marks {count} target tokens but draft_vocab_size is {draft}: "
                                "exactly draft_vocab_size entries must be true", "d2t/t2d come from another run than lm_head"))
        return False
    return True


def _marks_exactly(mask: bytes, targets: list[int]) -> bool:
    """t2d marks exactly d2t's targets (all in range): as many marks as targets, and every target marked."""
    if mask.count(1) != len(targets):
        return False
    if len(targets) < 2:
        return all(mask[t] for t in targets)
    return 0 not in operator.itemgetter(*targets)(mask)


def _offsets(d2t: MapTensor) -> list[int] | None:
    code, size = D2T_DTYPES[d2t.dtype]
    data = d2t.read()
    if len(data) != d2t.shape[0] * size:
        return None
    values = array(code)
    values.frombytes(data)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tolist()


def _targets(offsets: list[int]) -> list[int]:
    return list(map(operator.add, range(len(offsets)), offsets))


def _marks(mask: bytes) -> list[int]:
    return list(compress(range(len(mask)), mask))


def _little_endian(values: array) -> bytes:
    if sys.byteorder == "big":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()
