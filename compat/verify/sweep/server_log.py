"""The server's own log as a source of acceptance (`--server-log FILE`): for servers that publish no counters compat
can difference (SGLang without --enable-metrics, whose server info only keeps a cumulative average), the log lines
the server writes while a level runs: SGLang's decode lines (`accept len: 2.31, accept rate: ...`), vLLM's
`SpecDecoding metrics:` lines. They are recognised by the release's own logger call (the `error_sites` probe, as
`compat explain` reads them) and their numbers read off its template.

The log is followed like `tail -f`: before a level, its end; after, what was appended (at most `MAX_LEVEL_BYTES`).
A logging interval that straddles two levels is counted where it was written: said in the level's notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from compat.acceptance import AcceptanceSample
from compat.core.errors import RefusedError, UsageError

MAX_LEVEL_BYTES = 64 << 20


@dataclass
class LogTail:
    path: Path
    offset: int = 0
    notes: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, path: str) -> LogTail:
        file = cls.check(path)
        return cls(file, file.stat().st_size)

    @staticmethod
    def check(path: str) -> Path:
        """The log file: nothing there is a usage error (2), something else than a file is refused (4)."""
        file = Path(path).expanduser()
        hint = "the file the server writes its log to (e.g. `python -m sglang.launch_server ... 2>&1 | tee server.log`)"
        if file.exists() and not file.is_file():
            raise RefusedError(f"--server-log {path}: not a file", hint=hint)
        if not file.is_file():
            raise UsageError(f"--server-log {path}: no such file", hint=hint)
        return file

    def skip(self) -> None:
        """From here on: what the server writes next."""
        try:
            self.offset = self.path.stat().st_size
        except OSError:
            self.offset = 0

    def take(self) -> list[str]:
        """The lines appended since `skip` (a rotated or truncated log is read from its start)."""
        try:
            size = self.path.stat().st_size
            if size < self.offset:
                self.offset = 0
            with open(self.path, "rb") as log:
                log.seek(self.offset)
                data = log.read(min(size - self.offset, MAX_LEVEL_BYTES))
        except OSError:
            return []
        self.offset += len(data)
        return data.decode("utf-8", errors="replace").splitlines()


def log_acceptance(lines: list[str], engine: str, sites: list[dict], k: int | None) -> AcceptanceSample | None:
    """The acceptance the log lines of one level report, or None when none is a metrics line of this release."""
    from compat.explain.analysis import analyse
    from compat.explain.sites import SiteIndex
    from compat.explain.text import Line

    evidence = analyse((Line(n, text) for n, text in enumerate(lines, 1)), engine, SiteIndex(sites))
    if evidence.series is None or not evidence.series.intervals:
        return None
    from dataclasses import replace

    sample = evidence.series.sample()
    return replace(sample, source=f"the server's log: {sample.source}, read by the release's logger call at "
                                  f"{evidence.series.site.location}",
                   num_speculative_tokens=sample.num_speculative_tokens or k)
