"""Apply a plan and revert a record, each as one journaled operation (compat/patching/journal.py).

Both are called under `tree_lock`, after `settle`: the files are as the last complete run left
them, and the record says what that run did.
"""

from __future__ import annotations

import base64
import json

from compat import __version__
from compat.core.errors import RefusedError
from compat.patch_record import new_record, record_bytes, record_path, record_relpath, timestamp
from compat.patching.files import current_bytes, os_error, remove_file, sha256
from compat.patching.journal import BACK, FORWARD, Change, run_journaled
from compat.patching.plan import APPLY, FileEdit, PlannedPatch, combined_edits, version_range
from compat.core.tree import EngineTree


def check_record(tree: EngineTree, record: dict | None, force: bool) -> tuple[dict | None, list[str]]:
    """Refuse when a recorded file changed since compat wrote it; forget a record the engine outlived."""
    if not record:
        return record, []
    files = record.get("files", {})
    now = {rel: sha256(current_bytes(tree.path(rel))) for rel in files}
    if files and all(now[rel] == info["sha256_before"] for rel, info in files.items()):
        try:  # every file is the original again: the engine was reinstalled
            remove_file(record_path(tree))
        except OSError as err:
            raise os_error(err, record_path(tree)) from None
        return None, [f"the engine's files are back to their originals (reinstalled?): forgot the stale record {record_path(tree)}"]
    changed = [rel for rel, info in files.items() if now[rel] != info["sha256_after"]]
    if changed and not force:
        raise RefusedError(
            f"changed since compat patched them: {', '.join(changed)}; nothing was changed",
            hint="a hand edit or a partial reinstall; inspect them, then --revert --force restores the originals "
            "(or pass --force to patch over them)",
        )
    return record, []


def apply(tree: EngineTree, planned: list[PlannedPatch], record: dict | None) -> tuple[dict, list[FileEdit], list[str]]:
    """Write the planned edits and the new record, all or nothing. Returns (record, edits, notes)."""
    edits = combined_edits(planned)
    if not edits:
        return record or {}, [], []
    committed = _commit(tree, record or new_record(tree), planned, edits, timestamp())
    changes = [Change(e.relpath, e.before, e.after) for e in edits]
    changes.append(Change(record_relpath(tree), current_bytes(record_path(tree)), record_bytes(committed), module=False))
    ids = [item.patch.id for item in planned if item.state == APPLY]
    notes = run_journaled(tree, "patch", changes, on_kill=BACK, patches=ids)
    return committed, edits, notes


def _commit(tree: EngineTree, base: dict, planned: list[PlannedPatch], edits: list[FileEdit], when: str) -> dict:
    record = json.loads(json.dumps(base))  # a copy
    record.update(compat_version=__version__, engine_version=tree.version, pending=None)
    for edit in edits:
        known = record["files"].get(edit.relpath)
        if known:  # a file patched before keeps its first original
            known["sha256_after"] = sha256(edit.after)
        else:
            record["files"][edit.relpath] = {
                "sha256_before": sha256(edit.before), "sha256_after": sha256(edit.after),
                "original_base64": base64.b64encode(edit.before).decode(),
            }
    for item in planned:
        if item.state == APPLY:
            record["patches"].append({
                "id": item.patch.id, "description": item.patch.description, "versions": version_range(item.patch.versions),
                "options": item.to_json()["options"], "files": [e.relpath for e in item.edits],
                "applied_at": when, "compat_version": __version__,
            })
    return record


def revert(tree: EngineTree, record: dict, force: bool) -> tuple[list[str], list[str]]:
    """Put back every recorded file byte for byte and remove the record. Returns (files restored, notes)."""
    changes = []
    for relpath, info in record.get("files", {}).items():
        now = current_bytes(tree.path(relpath))
        digest = sha256(now)
        if digest == info["sha256_before"]:
            continue  # already the original (a reinstall)
        if digest != info["sha256_after"] and not force:
            raise RefusedError(
                f"{relpath} changed since compat patched it; nothing was reverted",
                hint="inspect it (a hand edit? an upgrade?); --revert --force puts back the original anyway",
            )
        changes.append(Change(relpath, now, base64.b64decode(info["original_base64"])))
    restored = [c.relpath for c in changes]
    changes.append(Change(record_relpath(tree), current_bytes(record_path(tree)), None, module=False))
    ids = [p["id"] for p in record.get("patches", [])]
    return restored, run_journaled(tree, "revert", changes, on_kill=FORWARD, patches=ids)
