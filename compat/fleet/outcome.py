"""What one host (or Ray node) gave back: a command's JSON result, or an error with its fix and exit code."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from compat.core.errors import EXIT_REFUSED, EXIT_SOURCE

EXIT_UNREACHABLE = EXIT_SOURCE  # no connection, no python there: nothing could be read from that host
EXIT_HOST_KEY = EXIT_REFUSED  # an unknown or changed host key, a refused login: nothing was run there


@dataclass
class Outcome:
    host: str
    exit_code: int
    result: dict[str, Any] | None = None  # the command's JSON document (without its schema key)
    error: dict[str, Any] | None = None  # {error, fix, exit_code}
    seconds: float = 0.0
    stderr: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the Ray node id

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.error is None

    def document(self) -> dict[str, Any]:
        out: dict[str, Any] = {"host": self.host, "ok": self.ok, **self.extra}
        if self.result is not None:
            out["result"] = self.result
        if self.error is not None:
            out["error"] = self.error
        if not self.ok:
            out["exit_code"] = self.exit_code
        return out


def failed(host: str, message: str, fix: str | None, exit_code: int, **extra: Any) -> Outcome:
    return Outcome(host, exit_code, error={"error": message, "fix": fix, "exit_code": exit_code}, extra=dict(extra))


def from_output(host: str, exit_code: int, stdout: str, stderr: str, **extra: Any) -> Outcome:
    """A remote `compat COMMAND --json` run: its document, an error document, or output that is neither."""
    try:
        document = json.loads(stdout)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        tail = " ".join(stderr.strip().splitlines()[-3:])[-400:] or f"exit code {exit_code}, nothing printed"
        return failed(host, f"compat did not answer on {host}: {tail}", "run it there with -v to see why",
                      exit_code or 1, **extra)
    schema = document.pop("schema", "")
    if schema.startswith("compat.error/") or ("error" in document and "fix" in document and len(document) <= 3):
        error = {k: document.get(k) for k in ("error", "fix", "exit_code")}
        return Outcome(host, int(document.get("exit_code") or exit_code or 1), error=error, stderr=stderr, extra=dict(extra))
    document.pop("exit_code", None) if document.get("exit_code") == 0 else None
    return Outcome(host, exit_code, result=document, stderr=stderr, extra=dict(extra))
