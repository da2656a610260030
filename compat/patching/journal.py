"""Patch and revert as a journal: whatever the instant a run is killed, the next run puts the tree
back to exactly before that run or exactly after it.

An operation is a list of changes (a file's bytes before and after; None for no file), the
record being the last. It runs as:

1. the journal `<package>/.compat-patches.journal` is written (atomically): the operation, and
   every file's bytes before and after;
2. each file in turn: its cached bytecode is removed, then the file is replaced atomically;
3. the journal is removed: the operation is complete.

`settle` (the first thing every run does, under the lock) finds a journal left by a killed run
and finishes it: when every file already has its new content, the run was complete and only
its journal is removed; otherwise an interrupted patch is rolled back (to the bytes before it)
and an interrupted revert is finished (the originals, no record). It also removes the temp files
(`.<name>.XXXX.compat-tmp`) of every file the journal names, and every one in the package
directory (the record's and the journal's own).
Settling is itself idempotent, so a kill while settling is settled by the run after. A run that
fails in-process (a full disk, an I/O error) undoes its own changes the same way, and only when
that fails too leaves the journal for the next run.

A run holds an exclusive `flock` on the package directory, so two runs never interleave, and a
journal seen under the lock belongs to a dead run.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from datetime import datetime, timezone

from compat.core.errors import CompatError, RefusedError
from compat.core.locking import directory_lock
from compat.core.output import plural
from compat.patching.files import (
    check_writable, current_bytes, drop_bytecode, os_error, remove_file, remove_temp_files, sha256, temp_files_in,
    write_atomic,
)
from compat.core.tree import EngineTree

from compat.patch_record import JOURNAL_NAME  # noqa: E402  (one spelling, beside the record's)
JOURNAL_FORMAT = 1
LOCK_TIMEOUT = 60.0  # seconds to wait for another run on the same tree
BACK, FORWARD = "back", "forward"  # what settling an interrupted operation does


@dataclass
class Change:
    relpath: str
    before: bytes | None  # None: the file does not exist
    after: bytes | None
    module: bool = True  # a Python module (its bytecode goes before its source changes); False for the record


def journal_path(tree: EngineTree) -> Path:
    return tree.root / tree.engine / JOURNAL_NAME


# -- the lock ------------------------------------------------------------------------------------
@contextlib.contextmanager
def tree_lock(tree: EngineTree, timeout: float | None = None, notify=None, shared: bool = False):
    """An exclusive flock on the package directory: one compat patch run per tree at a time.

    Another run is waited for up to LOCK_TIMEOUT seconds, then refused naming its pid
    (compat/core/locking.py). `shared`: a reader's lock (--status, --dry-run), held by any number of
    readers at once and never while a run changes the tree, so a reader never sees a run half-way.
    A filesystem without locks leaves a reader unlocked. The directory itself is locked, so no
    lock file is left in site-packages.
    """
    timeout = LOCK_TIMEOUT if timeout is None else timeout
    with directory_lock(tree.root / tree.engine, what="compat patch", timeout=timeout, shared=shared, notify=notify,
                        unlockable_ok=shared):
        yield


# -- running an operation ------------------------------------------------------------------------
def run_journaled(tree: EngineTree, operation: str, changes: list[Change], *, on_kill: str, patches=()) -> list[str]:
    """Make `changes` all or nothing, recoverably at any instant. Call under the lock, after `settle`.

    `on_kill`: BACK (a patch is undone when interrupted) or FORWARD (a revert is finished).
    Returns notes; raises RefusedError (nothing changed, or said otherwise) on any OSError.
    """
    jpath = journal_path(tree)
    for change in changes:
        if sha256(current_bytes(tree.path(change.relpath))) != sha256(change.before):
            raise RefusedError(f"{change.relpath} changed on disk while compat was planning; nothing was changed",
                               hint="another program is writing the engine's files: let it finish, then run again")
    check_writable([jpath] + [tree.path(c.relpath) for c in changes], [tree.path(c.relpath) for c in changes if c.module])
    journal = {
        "format": JOURNAL_FORMAT, "tool": "compat", "operation": operation, "on_kill": on_kill,
        "patches": list(patches), "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "pid": os.getpid(),
        "files": [_entry(c) for c in changes],
    }
    try:
        write_atomic(jpath, (json.dumps(journal, indent=1) + "\n").encode())
    except OSError as err:
        raise os_error(err, jpath) from None
    path = jpath
    try:
        for change in changes:
            path = tree.path(change.relpath)
            _put(tree, change.relpath, change.module, change.after)
    except BaseException as err:  # a full disk, an I/O error, Ctrl-C: undo what was done
        _undo_in_process(tree, journal, err, path)
        raise
    try:
        remove_file(jpath)
    except OSError as err:
        return [f"the change is complete, but its journal {jpath} could not be removed ({err.strerror}); the next run removes it"]
    return []


def _entry(change: Change) -> dict:
    def b64(data):
        return base64.b64encode(data).decode() if data is not None else None

    return {"relpath": change.relpath, "module": change.module,
            "sha256_before": sha256(change.before), "sha256_after": sha256(change.after),
            "before_base64": b64(change.before), "after_base64": b64(change.after)}


def _put(tree: EngineTree, relpath: str, module: bool, data: bytes | None) -> None:
    path = tree.path(relpath)
    if module:
        drop_bytecode(path)  # first: a kill right after leaves the old source and no bytecode, never new source and old bytecode
    if data is None:
        remove_file(path)
    else:
        write_atomic(path, data)


def _undo_in_process(tree: EngineTree, journal: dict, err: BaseException, path: Path) -> None:
    jpath = journal_path(tree)
    try:
        _roll(tree, journal, BACK, force=False)
        remove_file(jpath)
    except (OSError, CompatError) as again:
        why = again.strerror if isinstance(again, OSError) else again.message
        then = "undo" if journal["on_kill"] == BACK else "finish"
        if isinstance(err, OSError):
            raise os_error(err, path, f"the run is half done and could not be undone now ({why}): the next compat patch "
                                      f"run on this tree will {then} it (journal {jpath})") from None
        raise
    if isinstance(err, OSError):
        raise os_error(err, path) from None


# -- settling what a killed run left --------------------------------------------------------------
def read_journal(tree: EngineTree) -> dict | None:
    path = journal_path(tree)
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise RefusedError(f"{path}: cannot read the journal of an interrupted compat patch run ({err})",
                           hint="check the files it names against the record by hand, then move the journal away") from None
    if not isinstance(data, dict) or data.get("format") != JOURNAL_FORMAT or not isinstance(data.get("files"), list):
        raise RefusedError(f"{path}: not a compat patch journal of format {JOURNAL_FORMAT}",
                           hint="it was written by another compat version: run that version on this tree to settle it")
    return data


def needs_settling(tree: EngineTree) -> bool:
    """Is there a journal, or a compat temp file in the package directory (the record's, the journal's)?"""
    return journal_path(tree).exists() or bool(temp_files_in(tree.root / tree.engine))


def settle(tree: EngineTree, *, force: bool = False) -> list[str]:
    """Finish or undo the operation a killed run left, and remove its temp files. Call under the lock.

    Returns what was done, for the user. Raises RefusedError when a file the journal names has
    changed since (neither its content before nor after that run), unless `force`.
    """
    package = tree.root / tree.engine
    notes = []
    journal = read_journal(tree)
    try:
        if journal is not None:
            notes.append(_settle_journal(tree, journal, force))
        leftovers = remove_temp_files(package, every_in_directory=True)
    except OSError as err:
        raise os_error(err, journal_path(tree), "the interrupted run is not settled yet (the next run tries again)") from None
    if leftovers:
        notes.append(f"removed {plural(len(leftovers), 'temporary file')} an interrupted compat patch run left: "
                     + ", ".join(p.name for p in leftovers))
    return notes


def _settle_journal(tree: EngineTree, journal: dict, force: bool) -> str:
    what = "compat patch --revert" if journal.get("operation") == "revert" else "compat patch"
    ids = ", ".join(journal.get("patches") or []) or "no patch"
    run = f"an earlier `{what}` run ({ids}; pid {journal.get('pid')}, started {journal.get('started_at')}) was interrupted"
    check_writable([journal_path(tree)] + [tree.path(f["relpath"]) for f in journal["files"]],
                   [tree.path(f["relpath"]) for f in journal["files"] if f.get("module")])
    complete = all(sha256(current_bytes(tree.path(f["relpath"]))) == f["sha256_after"] for f in journal["files"])
    if complete:
        _roll(tree, journal, FORWARD, force)  # nothing to write: removes temp files and stale bytecode
        said = f"{run} after it had made every change; they stand"
    elif journal.get("on_kill") == FORWARD:
        written = _roll(tree, journal, FORWARD, force)
        said = f"{run}; finished it: " + (f"restored {', '.join(written)}" if written else "nothing was left to do")
    else:
        written = _roll(tree, journal, BACK, force)
        said = f"{run}; rolled it back: " + (f"restored {', '.join(written)} as before that run" if written else "nothing had been changed yet")
    remove_file(journal_path(tree))
    return said


def _roll(tree: EngineTree, journal: dict, direction: str, force: bool) -> list[str]:
    """Bring every file of the journal to its content before (BACK) or after (FORWARD) the operation."""
    key = "before" if direction == BACK else "after"
    files = journal["files"] if direction == FORWARD else list(reversed(journal["files"]))
    now = {f["relpath"]: sha256(current_bytes(tree.path(f["relpath"]))) for f in files}
    strangers = [f["relpath"] for f in files if now[f["relpath"]] not in (f["sha256_before"], f["sha256_after"])]
    if strangers and not force:
        raise RefusedError(
            f"changed after an interrupted compat patch run (neither its old nor its new content): {', '.join(strangers)}; "
            "nothing was changed",
            hint=f"inspect them; --force puts back the content they had {'before' if direction == BACK else 'after'} that run",
        )
    written = []
    for f in files:
        path = tree.path(f["relpath"])
        remove_temp_files(path)
        if f.get("module"):
            drop_bytecode(path)
        if now[f["relpath"]] == f[f"sha256_{key}"]:
            continue
        data = f[f"{key}_base64"]
        _put(tree, f["relpath"], False, base64.b64decode(data) if data is not None else None)
        written.append(f["relpath"] if data is not None else f"{f['relpath']} (removed)")
    return written


def settle_for_reading(tree: EngineTree, force: bool = False) -> tuple[list[str], dict | None]:
    """Settle before reading a tree's patch state (probe, --status, --dry-run), never raising.

    Returns (notes, unsettled): `unsettled` describes a journal that could not be settled here
    (the tree is not writable by this user, another run holds it, a file changed since).
    """
    if tree.source.kind == "released" or not needs_settling(tree):
        return [], None  # a fetched release is a shared cache compat never writes
    problem: CompatError
    try:
        with tree_lock(tree):
            return settle(tree, force=force), None
    except OSError as err:
        problem = os_error(err, journal_path(tree), "the interrupted run was not settled")
    except CompatError as err:
        problem = err
    journal = None
    with contextlib.suppress(CompatError):
        journal = read_journal(tree)
    return [], {
        "interrupted": (journal or {}).get("operation", "unknown"), "patches": (journal or {}).get("patches", []),
        "files": [f["relpath"] for f in (journal or {}).get("files", [])], "journal": str(journal_path(tree)),
        "intact": False, "error": problem.message, "fix": problem.hint,
    }


def applied_patches_settled(tree: EngineTree, notify=None) -> list[dict]:
    """What `compat probe` shows: an interrupted patch/revert run settled first (rolled back or finished, as
    the next `compat patch` would; said on stderr or to `notify`), then the record's patches. When it cannot
    be settled here (not writable by this user, another run holds the tree), the list ends with one entry
    {"interrupted": ..., "journal": ..., "fix": ...} instead of pretending the files are intact."""
    import sys

    from compat.patch_record import applied_patches

    say = notify or (lambda text: print(f"note: {text}", file=sys.stderr))
    notes, unsettled = settle_for_reading(tree)
    for note in notes:
        say(note)
    return applied_patches(tree) + ([unsettled] if unsettled else [])
