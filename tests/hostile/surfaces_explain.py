"""Surface: `compat explain` with hostile pasted logs, read against the real vLLM 0.32.0 release (cached, --offline):
binary bytes, sparse files of gigabytes (all NUL, or a text head and a NUL tail), ANSI escapes, CR-only lines,
invalid UTF-8, a 100 MB single line, millions of `SpecDecoding metrics` lines whose counters lie (negative, NaN,
more accepted than drafted, going backwards, 5,000-digit numbers), and a log that never ends: a FIFO (--log) or a
pipe (-) whose writer keeps it open.

What is judged for a log that never ends: explain reads a log to its end (`tail -f server.log | compat explain -`
is a legitimate use, and a FIFO is a pipe with a name), so waiting is right; the bound is the user's: Ctrl-C must
end it at once, with exit 130, one line and no traceback. The case sends SIGINT after 4 seconds.
Every other input: a verdict (0 recognised, 1 not), or one clear error (2: not text), bounded.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
from pathlib import Path
from typing import Iterator

from surfaces import Case, surface

RELEASE = "vllm==0.32.0"
METRICS = ("INFO 12-02 11:00:{s:02d} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: {length}, Accepted throughput: "
           "{tput} tokens/s, Drafted throughput: 40.00 tokens/s, Accepted: {acc} tokens, Drafted: {drafted} tokens, "
           "Per-position acceptance rate: {per}, Avg Draft acceptance rate: {rate}%")
ERROR = ("ValueError: Eagle3 is only supported for ['llama', 'qwen'] models. Got "
         "self.target_model_config.hf_text_config.model_type='kimi_k2'")
TEXT = [ERROR, "INFO 12-02 11:00:00 [api_server.py:1] vLLM API server version 0.32.0", "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/config/speculative.py", line 794, in _verify_args',
        "torch.OutOfMemoryError: CUDA out of memory.", "hello", ""]


def lying_number(rng: random.Random) -> str:
    return rng.choice(["-5", "NaN", "nan", "inf", "-inf", "0", "1e308", "9" * rng.choice([20, 20, 20, 5000]), "1,000", "-0.00",
                       "0x10", "", "١٢٣", str(rng.randint(0, 10**6))])


def metrics_line(rng: random.Random, second: int) -> str:
    per = rng.choice(["0.800, 0.600, 0.400", "NaN, NaN", "", "1.5, -2.0, 3e9", ", ".join(["0.5"] * rng.choice([1, 3, 3, 3, 500])),
                      "[" * 100, lying_number(rng)])
    return METRICS.format(s=second % 60, length=lying_number(rng), tput=lying_number(rng), acc=lying_number(rng),
                          drafted=lying_number(rng), per=per, rate=lying_number(rng))


def write_metrics(path: Path, rng: random.Random, lines: int, plain: bool = False) -> None:
    """`lines` metrics lines: a block of 1,000 distinct lying lines, repeated (written fast, read line by line);
    plain: no 5,000-digit numbers or 500-position lists (lines of ~300 bytes: millions of them, not gigabytes)."""
    block = "".join(metrics_line(rng, i) + "\n" for i in range(1000)).encode()
    if plain:
        block = "".join(line + "\n" for line in block.decode().splitlines() if len(line) < 400).encode()
        block = block * max(1, 1000 // max(1, block.count(b"\n")))
    with path.open("wb") as out:
        for _ in range(max(1, lines // 1000)):
            out.write(block)


def sparse(path: Path, rng: random.Random, gigabytes: int) -> None:
    with path.open("wb") as out:
        if rng.random() < 0.5:
            out.write(("\n".join(TEXT) + "\n").encode() * 200)  # a text head past the 8 KiB sniff: the NULs come later
        out.truncate(gigabytes << 30)


def content(rng: random.Random, path: Path, big: bool) -> str:
    """Write one hostile log to path; returns what it is."""
    kind = rng.choice(["binary", "sparse", "ansi", "cr-only", "invalid utf-8", "one huge line", "metrics", "mixed"])
    if kind == "binary":
        path.write_bytes(os.urandom(rng.choice([1, 100, 10_000, 1 << 20])))
    elif kind == "sparse":
        sparse(path, rng, 4 if big else 1)  # gigabytes, no disk: truncate makes a hole
    elif kind == "ansi":
        codes = ["\x1b[31m", "\x1b[0m", "\x1b[2J", "\x1b]0;title\x07", "\x1b[?25l", "\x1b[", "\x1b", "\x1bP", "\x1b]8;;http://x\x1b\\"]
        path.write_text("".join(rng.choice(codes) + rng.choice(TEXT) + rng.choice(codes) + "\n" for _ in range(20_000)))
    elif kind == "cr-only":
        path.write_bytes(("\r".join(rng.choice(TEXT) for _ in range(200_000))).encode())
    elif kind == "invalid utf-8":
        junk = [b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"]
        path.write_bytes(b"".join(rng.choice(junk) + rng.choice(TEXT).encode() + b"\n" for _ in range(20_000)))
    elif kind == "one huge line":
        with path.open("wb") as out:
            out.write(ERROR.encode() + b" ")
            chunk = rng.choice([b"x", b"\x1b[31m", b"\r", b"a b ", b"\xc3"]) * (1 << 20)
            for _ in range((100 if big else 30) * (1 << 20) // len(chunk)):
                out.write(chunk)
    elif kind == "metrics":  # millions in the stress run (one in ten metrics cases: ~2 min each), else 50,000
        millions = big and rng.random() < 0.1
        write_metrics(path, rng, 2_000_000 if millions else 50_000, plain=millions)
        return "millions of metrics lines" if millions else kind
    else:
        path.write_text("\n".join(rng.choice(TEXT + [metrics_line(rng, i)]) for i in range(50_000)))
    return kind


@contextlib.contextmanager
def endless_fifo(path: Path, rng: random.Random) -> Iterator[None]:
    """A FIFO whose writer writes some log and keeps it open until the case ends."""
    os.mkfifo(path)
    done = threading.Event()

    def write() -> None:
        with contextlib.suppress(OSError), open(path, "wb") as out:
            for line in range(rng.choice([0, 10, 5000])):
                out.write((rng.choice(TEXT) + "\n").encode())
            out.flush()
            done.wait(120)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield
    finally:
        done.set()
        if writer.is_alive():  # no reader ever opened it: open the read end to release the writer
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(10)


def big_run() -> bool:
    return os.environ.get("COMPAT_STRESS") == "1"


@surface("explain logs")
def explain_logs(rng: random.Random, workdir: Path) -> Iterator[Case]:
    log = workdir / "server.log"
    base = ["explain", "--engine", RELEASE, "--offline", *rng.choice([["--json"], ["--json"], []])]
    as_json = "--json" in base
    if rng.random() < 0.12:
        how = rng.choice(["--log", "-"])
        with endless_fifo(log, rng):
            yield Case(argv=[*base, "--log", str(log)] if how == "--log" else [*base, "-"], what=f"a log that never ends ({how})",
                       exits={130}, deadline=60.0, interrupt_after=4.0, json=False, stdin=log if how == "-" else None)
        return
    kind = content(rng, log, big_run())
    how = rng.choice(["--log", "--log", "-", "text"])
    if how == "text":  # a pasted message: what fits in one argument
        with log.open("rb") as head:
            words = head.read(100_000).replace(b"\x00", b"").decode("utf-8", "replace")
        words = words.encode()[:100_000].decode("utf-8", "ignore")  # U+FFFD is 3 bytes: under 128 KiB encoded
        argv = [*base, words]
    else:
        argv = [*base, "--log", str(log)] if how == "--log" else [*base, "-"]
    deadline = 300.0 if kind.startswith("millions") else 120.0  # ~60 us a line: 2 million lines take ~2 min
    yield Case(argv=argv, what=f"{kind} ({how}, {log.stat().st_size:,} bytes)", exits={0, 1, 2}, deadline=deadline, json=as_json,
               stdin=log if how == "-" else None, quotes_input=True)
