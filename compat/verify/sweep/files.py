"""Writing the sweep's files: whole or not at all (a temporary file beside, then renamed), so an interrupted run
never leaves half a profile a consumer would read."""

from __future__ import annotations

from pathlib import Path

from compat.core import atomic
from compat.core.errors import RefusedError


def write_text(path: str, text: str) -> None:
    target = Path(path)
    try:
        atomic.write_text(target, text, keep_mode=False, mode=0o600)
    except OSError as err:
        raise RefusedError(f"cannot write {target}: {err.strerror or err}", hint="choose a writable path") from None
