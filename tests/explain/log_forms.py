"""How a traceback or a message reaches a log, as each engine and the tools around it write it, and how people paste
it: transforms of a list of lines (the forms are the ones compat/explain/prefixes.py cites from the engines' source).

Nothing here is a log: each transform takes lines an engine (or a traceback modelled from a release's source, see
release_text.py) produced, and writes them the way that process, logger or tool would.
"""

from __future__ import annotations

import json
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


def vllm_json(lines: list[str], name: str = "EngineCore_DP0", pid: int = 4242) -> list[str]:
    """vLLM >= 0.32 with its JSON formatter (vllm/logger.py: pythonjsonlogger's JsonFormatter on JSON_FORMAT,
    vllm/logging_utils/formatter.py:7-9): `logger.exception(...)` is one line, the traceback inside `exc_info`."""
    record = {"asctime": "2026-12-05 09:11:52,123", "levelname": "ERROR", "name": "vllm.v1.engine.core",
              "processName": name, "process": pid, "message": "EngineCore failed to start.", "exc_info": "\n".join(lines)}
    return [json.dumps(record)]


def docker_json(lines: list[str]) -> list[str]:
    """Docker's json-file driver (`/var/lib/docker/containers/ID/ID-json.log`): a record per line as written."""
    return [json.dumps({"log": line + "\n", "stream": "stderr", "time": "2026-12-05T09:11:52.123456789Z"})
            for line in lines]


def journald_json(lines: list[str], unit: str = "vllm", pid: int = 777) -> list[str]:
    """`journalctl -o json`: a record per line, the text in MESSAGE."""
    return [json.dumps({"MESSAGE": line, "_PID": str(pid), "SYSLOG_IDENTIFIER": unit, "PRIORITY": "3"}) for line in lines]


def unknown_prefix(lines: list[str], prefix: str = "[gpu-node-3] ") -> list[str]:
    """A prefix compat has no pattern for, the same on every line: vLLM's VLLM_LOGGING_PREFIX (vllm/logger.py
    `_FORMAT` starts with it), a wrapper script's tag."""
    return [prefix + line for line in lines]


def shipper_time(lines: list[str]) -> list[str]:
    """A time stamp compat has no pattern for, changing from line to line (moreutils' `ts "%b %d %H:%M:%.S"`)."""
    return [f"Dec 05 09:11:{52 + i // 7:02d}.{(i * 137_911) % 1_000_000:06d} {line}" for i, line in enumerate(lines)]


def exception_group(lines: list[str]) -> list[str]:
    """Python 3.11+: a traceback inside an exception group (an asyncio TaskGroup's, as the API server's), drawn inside
    `| ` (traceback.TracebackException.format, `_ctx.indent()`)."""
    outer = ["  + Exception Group Traceback (most recent call last):",
             '  |   File "/usr/lib/python3.12/asyncio/taskgroups.py", line 145, in __aexit__',
             "  |     raise me from None",
             "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)",
             "  +-+---------------- 1 ----------------"]
    return outer + [f"    | {line}".rstrip() for line in lines] + ["    +------------------------------------"]


def ray_repeated(lines: list[str]) -> list[str]:
    """Ray's log deduplication: the line other actors also wrote ends ` [repeated 3x across cluster]` (the first time
    with Ray's note; ray/_private/ray_logging/__init__.py, 2.60.0)."""
    note = (" (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see "
            "https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html#log-deduplication "
            "for more options.)")
    return [*lines[:-1], lines[-1] + " [repeated 3x across cluster]" + note]


def flattened(lines: list[str]) -> list[str]:
    """A tracker, a chat or a title field that folds newlines: every line of the traceback on one line, each
    separated by a space, the process prefix repeated wherever a line began (as users paste them upstream, e.g. the
    frames of vllm-project/vllm#26328 or sgl-project/sglang#8229 pasted without their code block)."""
    return [" ".join(line.strip("\n") for line in lines)]
