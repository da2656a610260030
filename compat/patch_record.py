"""The record `compat patch` keeps beside an engine, and how to read it (probe, doctor and patch share this).

`<package>/.compat-patches.json` (e.g. `site-packages/vllm/.compat-patches.json`), format 1:

    {"format": 1, "tool": "compat", "compat_version": "0.1.0",
     "engine": "vllm", "engine_version": "0.11.0", "tree": "/abs/root",
     "patches": [{"id", "description", "versions", "options", "files", "applied_at", "compat_version"}, ...],
     "files": {"vllm/config/speculative.py": {"sha256_before", "sha256_after", "original_base64"}, ...},
     "pending": null}

`files` holds, per file compat changed, the sha256 of the release's original and of compat's
last write, and the original bytes, so `--revert` is byte-identical however many runs patched
the file. `pending` is always null: an operation in progress is described by the journal
(compat/patching/journal.py) until it is complete, and the record is only ever replaced whole.

Reading a tree's patch state first settles an interrupted `compat patch` / `--revert` run (the
journal), so no reader reports a half-done state as if it were one.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from compat import __version__
from compat.core.errors import CompatError, RefusedError
from compat.core.tree import EngineTree

RECORD_NAME = ".compat-patches.json"
RECORD_FORMAT = 1


def record_path(tree: EngineTree) -> Path:
    return tree.root / tree.engine / RECORD_NAME


def record_relpath(tree: EngineTree) -> str:
    return f"{tree.engine}/{RECORD_NAME}"


def sha256(data: bytes | None) -> str | None:
    import hashlib  # not at the top: `compat probe` of an unpatched tree never needs it

    return hashlib.sha256(data).hexdigest() if data is not None else None


def timestamp() -> str:
    """Now, in UTC; SOURCE_DATE_EPOCH (the reproducible-builds convention) pins it, so an image build's record is reproducible."""
    from datetime import datetime, timezone  # not at the top: `compat probe` never needs it

    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    when = datetime.fromtimestamp(int(epoch), timezone.utc) if epoch.isdigit() else datetime.now(timezone.utc)
    return when.isoformat(timespec="seconds")


def read_record(tree: EngineTree) -> dict | None:
    """The record as it is on disk (None: compat has not patched this tree). Raises RefusedError when unreadable."""
    path = record_path(tree)
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise RefusedError(f"{path}: cannot read the patch record ({err})",
                           hint="restore it from a backup, or reinstall the engine and delete the record") from None
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
        raise RefusedError(f"{path}: not a compat patch record of format {RECORD_FORMAT}",
                           hint="it was written by another compat version; use that version to revert")
    return data


def new_record(tree: EngineTree) -> dict:
    return {
        "format": RECORD_FORMAT, "tool": "compat", "compat_version": __version__,
        "engine": tree.engine, "engine_version": tree.version, "tree": str(tree.root.resolve()),
        "patches": [], "files": {}, "pending": None,
    }


def record_bytes(record: dict | None) -> bytes | None:
    """The exact bytes compat writes for a record (None: no record file)."""
    if record is None:
        return None
    return (json.dumps(record, indent=1, sort_keys=True) + "\n").encode()


JOURNAL_NAME = ".compat-patches.journal"  # an operation in progress (compat/patching/journal.py)
TEMP_SUFFIX = ".compat-tmp"  # a replacement not renamed into place yet (compat/patching/files.py)


def _traces(tree: EngineTree) -> bool:
    """Anything compat patch leaves in the package directory: its record, a journal, a temp file."""
    try:
        names = os.listdir(tree.root / tree.engine)
    except OSError:
        return False
    return any(n in (RECORD_NAME, JOURNAL_NAME) or n.endswith(TEMP_SUFFIX) for n in names)


def has_traces(tree: EngineTree) -> bool:
    """Anything compat patch leaves in the package directory: its record, a journal, a temp file."""
    return _traces(tree)


def applied_patches(tree: EngineTree) -> list[dict]:
    """The patches the record says compat applied to this tree, each with whether its files are intact;
    [] when none or unreadable. Read only: an interrupted run is settled by compat.patching first
    (compat.patching.applied_patches_settled does both, for `compat probe`)."""
    if not _traces(tree):
        return []  # no record, journal or temp file: nothing applied
    try:
        record = read_record(tree)
    except CompatError:
        record = None
    out = []
    if record:
        files = record.get("files", {})
        intact = {rel: sha256(_maybe_bytes(tree, rel)) == info.get("sha256_after") for rel, info in files.items()}
        out = [
            {
                "id": p["id"], "description": p.get("description", ""), "versions": p.get("versions"),
                "applied_at": p.get("applied_at"), "compat_version": p.get("compat_version"),
                "options": p.get("options", {}), "files": p.get("files", []),
                "intact": all(intact.get(rel, False) for rel in p.get("files", [])),
                "record": str(record_path(tree)),
            }
            for p in record.get("patches", [])
        ]
    return out


def _maybe_bytes(tree: EngineTree, relpath: str) -> bytes | None:
    """A recorded file's bytes now; None when gone or unreadable (then it is not intact)."""
    try:
        return tree.path(relpath).read_bytes()
    except OSError:
        return None
