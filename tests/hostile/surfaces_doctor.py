"""Surface: `compat doctor`'s own flags with hostile values: --spec KEY=VALUE (JSON that is huge, deep, not JSON,
escape sequences, empty keys), --layer-ids (negative, 5,000-digit, Arabic-Indic digits, floats, thousands of
ids), --layer-ids-convention, --num-speculative-tokens and --topk, on a Kimi-K2 target and a SpecForge drafter
read against the real vLLM 0.32.0 release (from the cache, --offline)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterator

from doctor_models import kimi_k2_target, specforge_drafter
from surfaces import Case, surface

ARG_MAX = 100_000  # one argument stays under Linux's 128 KiB per-argument limit

SPEC_KEYS = ["method", "model", "num_speculative_tokens", "draft_tensor_parallel_size", "max_model_len", "",
             "a" * 5000, "ключ", "__proto__", "x.y", " spaced ", "=", "quantization", "\x1b[31mred\x1b[0m"]


def hostile_text(rng: random.Random) -> str:
    return rng.choice([
        "", "{", "}", "[" * 20_000, "[" * 5000 + "]" * 5000, '{"a": ' * 3000, "9" * 5000, "-" + "9" * 90_000,
        "1e999999", "NaN", "-Infinity", "null", "true", '"\\ud800"', "\x1b[2J\x1b[31mred", "'single'", "-0", "0x10",
        "x" * ARG_MAX, "é" * 20_000, "\u202e\u2066bidi", "a=b=c", '{"method": "eagle3", "model": ' + '"' + "m" * 90_000 + '"}',
        "1_000", "١٢٣", "½", str(2**64), "-1", "3.5", "\t\n", "$(reboot)", "`id`", "; rm -rf /",
    ])


def layer_ids(rng: random.Random) -> list[str]:
    one = lambda: rng.choice(["-1", "0", "2", "30", "58", "61", "9" * 5000, "1.5", "1,,2", "١٢", "0x10", "1_000", " 3",
                              "", "nan", "inf", "+4", "2,30,58", "2 30 58", "-0", "᠑", "²", "1e3", hostile_text(rng)[:1000]])
    count = rng.choice([1, 2, 3, 3, 4, 50, 5000])
    return [one() for _ in range(min(count, 5000))] if count < 100 else [str(rng.randint(-10, 10**6)) for _ in range(count)]


@surface("doctor flags")
def doctor_flags(rng: random.Random, workdir: Path) -> Iterator[Case]:
    target = kimi_k2_target(workdir / "Kimi-K2-Instruct")
    drafter = specforge_drafter(workdir / "kimi-k2-eagle3")
    flags: list[str] = []
    for _ in range(rng.randint(1, 4)):
        pick = rng.random()
        if pick < 0.35:
            key = rng.choice(SPEC_KEYS)
            flags += ["--spec", rng.choice([f"{key}={hostile_text(rng)}", key, hostile_text(rng)])]
        elif pick < 0.7:
            flags += ["--layer-ids", *layer_ids(rng)]
        elif pick < 0.8:
            flags += ["--layer-ids-convention", rng.choice(["capture-before", "output-of", "both", "", hostile_text(rng)[:200]])]
        elif pick < 0.9:
            flags += ["--num-speculative-tokens", rng.choice(["0", "-3", "1", "1000000", "9" * 5000, "2.5", "x", ""])]
        else:
            flags += ["--topk", rng.choice(["0", "-1", "8", "10000000", "y", "1e3"])]
    flags = [f[:ARG_MAX] for f in flags]
    shown = " ".join(f if len(f) < 40 else f"{f[:20]}...({len(f)} chars)" for f in flags)
    shown = shown if len(shown) < 200 else f"{shown[:180]}...({len(flags)} arguments)"
    yield Case(argv=["doctor", str(target), str(drafter), "--engine", "vllm==0.32.0", "--offline", "--json", *flags],
               what=shown.encode("ascii", "backslashreplace").decode(), deadline=60.0)
