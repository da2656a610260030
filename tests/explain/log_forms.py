"""How a traceback or a message reaches a log, as each engine and the tools around it write it, and how people paste
it: transforms of a list of lines (the forms are the ones compat/explain/prefixes.py cites from the engines' source).

Nothing here is a log: each transform takes lines an engine (or a traceback modelled from a release's source, see
release_text.py) produced, and writes them the way that process, logger or tool would.
"""

from __future__ import annotations

import random

TIME = "12-05 09:11:52"  # vLLM's `%m-%d %H:%M:%S`
SG_TIME = "2026-12-05 09:11:52"  # SGLang's `%Y-%m-%d %H:%M:%S`
CYAN, RESET = "\x1b[0;36m", "\x1b[0;0m"
RED, GREY, END = "\x1b[31m", "\x1b[90m", "\x1b[0m"


def vllm_wrapped(lines: list[str], name: str, pid: int = 4242) -> list[str]:
    """vLLM <= 0.22: the process's stdout and stderr wrapped, `(NAME pid=N) ` before every line (`_add_prefix`)."""
    return [f"({name} pid={pid}) {line}" for line in lines]


def vllm_record(lines: list[str], name: str, pid: int = 4242, level: str = "ERROR", place: str = "core.py:1510",
                colour: bool = False) -> list[str]:
    """vLLM >= 0.32: one log record (`logger.exception(...)`): the process prefix and the head on every line
    (vllm/logger.py _FORMAT, NewLineFormatter; ColoredFormatter's colours when a terminal or VLLM_LOGGING_COLOR=1)."""
    if colour:
        return [f"{CYAN}({name} pid={pid}){RESET} {RED}{level}{END} {GREY}{TIME}{END} {GREY}[{place}]{END} {line}"
                for line in lines]
    return [f"({name} pid={pid}) {level} {TIME} [{place}] {line}" for line in lines]


def ray_actor(lines: list[str], name: str = "RayWorkerWrapper", pid: int = 9, ip: str = "10.0.0.7") -> list[str]:
    """A Ray actor's output as Ray's log monitor forwards it to the driver: `(NAME pid=N, ip=ADDRESS) `."""
    return [f"({name} pid={pid}, ip={ip}) {line}" for line in lines]


def torch_rank(lines: list[str], rank: int = 0) -> list[str]:
    """torch.distributed's excepthook: `[rank0]: ` before every non-empty line of an uncaught exception."""
    return [f"[rank{rank}]: {line}" if line else "" for line in lines]


def sglang_record(lines: list[str], ranks: str = " TP0", header: str = "Scheduler hit an exception: ") -> list[str]:
    """SGLang: `[time ranks] ` before a record's first line only; a traceback logged as
    `logger.error(f"Scheduler hit an exception: {traceback}")` continues bare."""
    return [f"[{SG_TIME}{ranks}] {header}{lines[0]}", *lines[1:]]


def kubectl(lines: list[str], pod: str = "vllm-0", container: str = "vllm", timestamps: bool = True) -> list[str]:
    """`kubectl logs --prefix [--timestamps]`."""
    stamp = "2026-12-05T09:11:52.123456789Z " if timestamps else ""
    return [f"[pod/{pod}/{container}] {stamp}{line}" for line in lines]


def journald(lines: list[str], unit: str = "vllm", pid: int = 777) -> list[str]:
    """`journalctl -u UNIT` (short format)."""
    return [f"Dec 05 09:11:52 gpu-node-3 {unit}[{pid}]: {line}" for line in lines]


def compose(lines: list[str], service: str = "vllm-1") -> list[str]:
    """`docker compose logs`."""
    return [f"{service}  | {line}" for line in lines]


def interleave(a: list[str], b: list[str], seed: int = 0) -> list[str]:
    """Two processes' lines written at once: each keeps its order, the two are shuffled together."""
    rng = random.Random(seed)
    out, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        if j >= len(b) or (i < len(a) and rng.random() < 0.5):
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    return out


def cut_head(lines: list[str], keep: int) -> list[str]:
    """What a `tail -n KEEP` or a paste that began mid-traceback leaves."""
    return lines[-keep:]


def cut_end(lines: list[str], drop: int) -> list[str]:
    """A paste that stopped before the traceback's end."""
    return lines[:-drop]
