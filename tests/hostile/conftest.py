"""The hostile-input campaign's helpers come from the tests that own the parts: tests/verify's fake servers,
tests/doctor's model builders."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "verify", HERE.parent / "doctor"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
