"""Time compat/vocab_maps.py on Kimi-K2 sizes: a 163840-entry t2d and a 32000-entry d2t (pure Python).

    python bench/bench_vocab_maps.py [--repeat 20]

Goal (issue 8): the check of a consistent pair well under 0.1 s, and so are the derivations.
The maps are built with the standard library only (no numpy), as a plain install runs them.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from array import array

from compat.vocab_maps import derive_missing, vocab_map_problems

VOCAB, DRAFT = 163840, 32000


class Map:
    def __init__(self, dtype, shape, data):
        self.dtype, self.shape, self.data = dtype, shape, data

    def read(self) -> bytes:
        return self.data


def maps(seed: int = 0) -> tuple[Map, Map]:
    used = sorted(random.Random(seed).sample(range(VOCAB), DRAFT))
    d2t = Map("I64", (DRAFT,), array("q", (t - i for i, t in enumerate(used))).tobytes())
    mask = bytearray(VOCAB)
    for t in used:
        mask[t] = 1
    return d2t, Map("BOOL", (VOCAB,), bytes(mask))


def timed(func, repeat: int) -> list[float]:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        runs.append(time.perf_counter() - start)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    d2t, t2d = maps()
    assert vocab_map_problems(DRAFT, VOCAB, d2t, t2d) == []
    cases = {
        "check d2t + t2d (consistent pair)": lambda: vocab_map_problems(DRAFT, VOCAB, d2t, t2d),
        "check d2t only": lambda: vocab_map_problems(DRAFT, VOCAB, d2t, None),
        "check t2d only": lambda: vocab_map_problems(DRAFT, VOCAB, None, t2d),
        "derive t2d from d2t": lambda: derive_missing(DRAFT, VOCAB, d2t, None),
        "derive d2t from t2d": lambda: derive_missing(DRAFT, VOCAB, None, t2d),
    }
    print(f"t2d {VOCAB} entries, d2t {DRAFT} entries; {args.repeat} runs each")
    print(f"{'case':36} {'median ms':>10} {'max ms':>8}")
    for name, func in cases.items():
        runs = timed(func, args.repeat)
        print(f"{name:36} {statistics.median(runs) * 1000:10.1f} {max(runs) * 1000:8.1f}")


if __name__ == "__main__":
    main()
