"""Writing the sweep's files: whole or not at all (a temporary file beside, then renamed), so an interrupted run
never leaves half a profile a consumer would read."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from compat.core.errors import RefusedError


def write_text(path: str, text: str) -> None:
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as err:
        raise RefusedError(f"cannot write {target}: {err.strerror or err}", hint="choose a writable path") from None
