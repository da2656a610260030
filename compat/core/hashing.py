"""sha256 without loading OpenSSL: `import hashlib` costs milliseconds at start-up, and the facts cache and the
release manifests hash on every warm run."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs milliseconds to import; mypy reads this as True
if TYPE_CHECKING:  # the private modules have no stubs; what they give is hashlib's sha256
    from hashlib import sha256
else:
    try:  # CPython's own sha256
        from _sha256 import sha256
    except ImportError:  # pragma: no cover - other Pythons, or 3.12+ (_sha2)
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256

__all__ = ["sha256"]
