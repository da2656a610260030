"""The concurrency levels of a sweep (`--concurrency 1,2,4,8,16`) and how many requests each level sends.

A level is measured with enough requests to keep `concurrency` of them in flight for most of its time
(`REQUESTS_PER_SLOT` per slot, at least `MIN_REQUESTS`), and at most `MAX_REQUESTS` and `--level-timeout`
seconds: a sweep is bounded in requests and in time, whatever the server does.
"""

from __future__ import annotations

import argparse

MAX_LEVEL = 1024
MAX_LEVELS = 16
MIN_REQUESTS = 8
REQUESTS_PER_SLOT = 2
MAX_REQUESTS = 256
DEFAULT_LEVEL_TIMEOUT = 300.0


def concurrency_list(text: str) -> tuple[int, ...]:
    """`4` or `1,2,4,8,16` -> the levels in increasing order; anything else is a usage error (argparse type)."""
    words = [w.strip() for w in str(text).split(",")]
    if not all(words):
        raise argparse.ArgumentTypeError(f"{text!r}: a level is missing (e.g. 1,2,4,8,16)")
    levels: list[int] = []
    for word in words:
        if not word.isdigit():
            raise argparse.ArgumentTypeError(f"{text!r}: {word!r} is not a whole number of requests in flight "
                                             "(e.g. --concurrency 1,2,4,8,16)")
        level = int(word)
        if level < 1:
            raise argparse.ArgumentTypeError(f"{text!r}: a level must be at least 1 request in flight")
        if level > MAX_LEVEL:
            raise argparse.ArgumentTypeError(f"{text!r}: {level} requests in flight; at most {MAX_LEVEL}")
        if level in levels:
            raise argparse.ArgumentTypeError(f"{text!r}: {level} is listed twice")
        levels.append(level)
    if len(levels) > MAX_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r}: {len(levels)} levels; a sweep takes at most {MAX_LEVELS}")
    return tuple(sorted(levels))


def requests_for(level: int, asked: int | dict[int, int] | None) -> int:
    """Requests sent at `level`: --num-prompts when given (at least the level itself; per level when a profile to
    compare with says how many it sent), else the default."""
    if isinstance(asked, dict):
        asked = asked.get(level)
    if asked is not None:
        return max(asked, level)
    return min(MAX_REQUESTS, max(MIN_REQUESTS, REQUESTS_PER_SLOT * level))
