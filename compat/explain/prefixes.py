"""What the engines and the tools around them write before a log line's own text, as patterns.

Each form is read from the code that writes it (cited at the release read; the patterns are tolerant of the
names a process takes, which change between releases):

vLLM
- a process prefix `(NAME pid=N) ` on every line a process writes:
  - wrapped stdout/stderr: `_add_prefix` in vllm/utils/__init__.py (0.11.0:3463) and vllm/utils/system_utils.py
    (0.16.0:188, 0.22.0:209);
  - since 0.32.0, a field of the log format instead: vllm/logger.py:28-31 (0.32.0, 0.33.0).
  NAME is set by `decorate_logs(...)` / the multiprocessing process name:
  - `EngineCore_DP0`, `EngineCore` (vllm/v1/engine/utils.py:284 in 0.32.0, :119 in 0.10.0 `EngineCore_0`);
  - `VllmWorker rank=2` (vllm/v1/executor/multiproc_executor.py:370, 0.10.0);
  - `VllmWorker TP1`, `VllmWorker PP1_TP0` (multiproc_executor.py:384-390, 0.10.1);
  - `Worker_TP1`, `Worker_DP1_PP0_TP1_EP1`, `VllmWorker-0` (multiproc_executor.py:689-700 in 0.11.0, :1088-1103 and
    :747 in 0.32.0);
  - `APIServer` (vllm/entrypoints/openai/api_server.py:1847 in 0.10.1; entrypoints/launchers/api_server/entry.py:167
    in 0.32.0), `ApiServer_0` (vllm/v1/utils.py:163, 0.10.0), `DPEngineCoreActor_DP0` (vllm/v1/engine/core.py:2560,
    0.32.0) and, on Ray, `(NAME pid=N, ip=ADDRESS)`.
- a log head `LEVEL MM-DD HH:MM:SS [file.py:LINE] ` (vllm/logger.py `_FORMAT`, `_DATE_FORMAT`: 0.10.0:24-26,
  0.32.0:28-33); since 0.32.0 every line of a multi-line record repeats it, process prefix included
  (vllm/logging_utils/formatter.py:77-80, NewLineFormatter).
- torch's `[rank0]: ` on every line of an uncaught exception in a process that set up torch.distributed
  (torch/distributed/distributed_c10d.py:1922-1933 in torch 2.13.0): how a worker's traceback reaches the log.

SGLang
- a log head `[YYYY-MM-DD HH:MM:SS(.mmm) DP1 PP0 TP3 EP3] ` (sglang/srt/utils/common.py:1265 `configure_logger`,
  0.5.12; :1169 in 0.5.8); the ranks are the scheduler's (sglang/srt/managers/scheduler.py:3951-3963 in 0.5.12:
  DP, PP, ATTN_CP, MOE_DP, TP, EP; :2897-2903 in 0.5.8), none for the detokenizer and the main process
  (sglang/srt/managers/detokenizer_manager.py:426). A record's further lines carry no head: a traceback logged as
  `Scheduler hit an exception: Traceback (most recent call last):` (scheduler.py:4045) continues bare.

Around them
- Ray's driver forwards its actors' lines as `(NAME pid=N, ip=ADDRESS) `, its own as `(raylet) `, and ends a line other
  actors also wrote with ` [repeated 3x across cluster]` (logline.py removes it);
- JSON records (vLLM's JSON formatter, Docker's json-file driver, `journalctl -o json`): structured.py;
- `kubectl logs --prefix`: `[pod/NAME/CONTAINER] `; `--timestamps` (and `docker logs -t`): an RFC 3339 time;
- journald (`journalctl`, short and short-iso): `Dec 05 09:11:52 HOST UNIT[PID]: `;
- docker compose: `SERVICE-1  | `;
- Python's default logging format: `LEVEL:logger.name:`.

The engines' own forms live in their units (compat/engines/<engine>.py `LOG_PREFIXES`, with these citations);
this module adds the tools' and builds the list the reader tries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from compat import engines

LEVELS = ("DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL")
_LEVEL = "|".join(LEVELS)
CLASSES = ("[", "(", "digit", "upper", "lower")


@dataclass(frozen=True)
class Prefix:
    name: str
    pattern: re.Pattern
    starts: tuple[str, ...]  # the kinds of character it can start with (CLASSES)

    @property
    def who(self) -> bool:
        """It names the process that wrote the line (its lines are read apart from other processes')."""
        return "who" in self.pattern.groupindex

    @property
    def head(self) -> bool:
        """A log record's head (its level, time, place): a record's further lines repeat it."""
        return "head" in self.pattern.groupindex


def _starts(pattern: str) -> tuple[str, ...]:
    """The kinds of character a prefix pattern starts with, read from its text (all, when it cannot be told)."""
    text = re.sub(r"^(?:\(\?P<\w+>)+", "", pattern)
    if text.startswith("\\") and len(text) > 1:
        return {"(": ("(",), "[": ("[",), "d": ("digit",)}.get(text[1], CLASSES)
    first = text[:1]
    if first.isupper():
        return ("upper",)
    if first.isdigit():
        return ("digit",)
    if first.isalpha():
        return ("lower",)
    return CLASSES


def _engine_prefixes() -> tuple[Prefix, ...]:
    """Each engine's LOG_PREFIXES (compat/engines/<engine>.py cites where its source writes them), once each."""
    seen: dict[str, Prefix] = {}
    for engine in engines.all_engines():
        for i, text in enumerate(engine.log_prefixes):
            seen.setdefault(text, Prefix(f"{engine.name}-{i}", re.compile(text), _starts(text)))
    return tuple(seen.values())


# The tools around the engines: kubectl (`--prefix`, `--timestamps`), journald, docker compose, Python's logging.
TOOL_PREFIXES: tuple[Prefix, ...] = (
    Prefix("kubectl", re.compile(r"\[(?P<who>pod/[^\s/\]]+/[^\s\]]+)\] ?"), ("[",)),
    Prefix("timestamp", re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? "), ("digit",)),
    Prefix("journald", re.compile(r"(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}) "
                                  r"[\w.-]+ (?P<who>[\w.@:/-]+(?:\[\d+\])?): "), ("digit", "upper")),
    Prefix("compose", re.compile(r"(?P<who>[A-Za-z0-9][\w.-]*[-_]\d+) +\| ?"), ("digit", "upper", "lower")),
    # Ray's driver (ray/_private/worker.py print_worker_logs, 2.60.0: `({prefix_for}{pid}{ip_prefix}) `): an actor's
    # `(NAME pid=N, ip=A)` is the engines' form; its own processes print `(raylet)`, `(autoscaler +1m2s)`.
    Prefix("ray", re.compile(r"\((?P<who>raylet|autoscaler \+[\w.]+)(?:, ip=[0-9a-fA-F.:]+)?\) ?"), ("(",)),
    Prefix("python-logging", re.compile(r"(?P<head>(?P<level>" + _LEVEL + r"):[\w.]+:)"), ("upper",)),
)
# The order they are tried in at each step; the reader strips them until none is left.
PREFIXES: tuple[Prefix, ...] = TOOL_PREFIXES[:1] + _engine_prefixes() + TOOL_PREFIXES[1:]
