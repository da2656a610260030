"""`compat patch`: apply the version-pinned source patches of `patches/<engine>/` to an engine tree.

sources -> patches -> record:

1. plan: the patches offered for the tree's version (`VERSIONS`), each checked against the
   files it edits (located by content): already fixed (by an earlier run or upstream), to
   apply (the new text computed in memory, compiled), or refused (the file is not what the
   patch expects). Nothing is written while planning: `--dry-run` prints the plan's diff.
2. apply: all-or-nothing across files. A record with the bytes of every file about to change
   is written first (`pending`), then each file is replaced atomically (temp file + rename,
   mode and owner kept), then the record is committed. A failure rolls back the files
   already written; a process killed half-way is rolled back by the next run, which finds
   the pending record. Stale `__pycache__/<module>.*.pyc` of touched files are removed
   (a pyc is validated by mtime seconds and size, which a revert can reproduce exactly).
3. record: `<package>/.compat-patches.json` beside the engine (`site-packages/vllm/`): patch
   ids, versions and options, and per file the sha256 before and after and the original
   bytes, so `--revert` is byte-identical and `compat probe` can show what is applied.
   A run holds an exclusive `flock` on the package directory, so two runs never interleave.
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import fcntl
import hashlib
import json
import os
import stat
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from compat import __version__
from compat.errors import EXIT_OK, EXIT_REFUSED, CompatError, RefusedError, UsageError
from compat.patches import FileNotAsExpected, Patch, all_patches
from compat.tree import EngineTree

RECORD_NAME = ".compat-patches.json"
RECORD_FORMAT = 1
LOCK_TIMEOUT = 60.0  # seconds to wait for another run on the same tree

# Plan states, as shown and as in --json.
APPLY = "apply"  # will change files
PRESENT = "present"  # the fix is there: applied by compat (see the record) or in this release upstream
NOT_OFFERED = "not-offered"  # the tree's version is outside the patch's VERSIONS
REFUSED = "refused"  # a file is missing or not what the patch expects
BLOCKED = "blocked"  # needs a patch that is skipped or refused


# -- the plan --------------------------------------------------------------------------------------
@dataclass
class FileEdit:
    relpath: str
    before: bytes
    after: bytes

    def diff(self) -> str:
        a = self.before.decode("utf-8").splitlines(keepends=True)
        b = self.after.decode("utf-8").splitlines(keepends=True)
        return "".join(difflib.unified_diff(a, b, f"a/{self.relpath}", f"b/{self.relpath}"))

    def stat(self) -> tuple[int, int]:
        added = removed = 0
        for line in self.diff().splitlines():
            if line.startswith("+") and not line.startswith("+++"):
                added += 1
            elif line.startswith("-") and not line.startswith("---"):
                removed += 1
        return added, removed


@dataclass
class PlannedPatch:
    patch: Patch
    state: str
    reason: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)  # every file the patch concerns
    edits: list[FileEdit] = field(default_factory=list)  # this patch's own steps (a file may chain patches)
    applied_by_compat: bool = False

    def to_json(self) -> dict:
        out = {
            "id": self.patch.id, "state": self.state, "description": self.patch.description,
            "versions": version_range(self.patch.versions), "files": self.files,
            "options": {k: list(v) if isinstance(v, tuple) else v for k, v in self.options.items()},
        }
        if self.reason:
            out["reason"] = self.reason
        if self.state == PRESENT:
            out["by"] = "compat" if self.applied_by_compat else "upstream"
        return out


def _options(patch: Patch, model_types: list[str]) -> dict[str, Any]:
    options = dict(patch.options)
    if "model_types" in options and model_types:
        options["model_types"] = tuple(dict.fromkeys([*options["model_types"], *model_types]))
    return options


def plan(
    tree: EngineTree,
    *,
    select: list[str] = (),
    skip: list[str] = (),
    model_types: list[str] = (),
    force: bool = False,
    record: dict | None = None,
) -> list[PlannedPatch]:
    """What each patch of the tree's engine would do to it; reads files, writes nothing."""
    patches = all_patches(tree.engine)
    _check_ids(tree.engine, patches, [*select, *skip])
    recorded = {p["id"] for p in (record or {}).get("patches", [])}
    current: dict[str, bytes] = {}  # file contents as the plan goes (two patches may edit one file)
    planned: list[PlannedPatch] = []
    states: dict[str, str] = {}
    for patch in patches:
        if (select and patch.id not in select) or patch.id in skip:
            continue
        item = _plan_one(tree, patch, _options(patch, list(model_types)), force, current)
        item.applied_by_compat = item.state == PRESENT and patch.id in recorded
        missing = [
            r for r in (patch.requires if item.state == APPLY else ())
            if _required_state(tree, patches, r, states, model_types, force, current) not in (APPLY, PRESENT)
        ]
        if missing:
            item = PlannedPatch(patch, BLOCKED, f"needs {', '.join(missing)} (skipped, refused or not offered); select it too",
                                item.options, item.files)
        if item.state == APPLY:
            for edit in item.edits:
                current[edit.relpath] = edit.after
        states[patch.id] = item.state
        planned.append(item)
    return planned


def _required_state(tree, patches, required: str, states: dict, model_types, force: bool, current: dict) -> str | None:
    """The state of a patch another one builds on: planned in this run, else is its fix in the tree already?"""
    if required in states:
        return states[required]
    patch = next((p for p in patches if p.id == required), None)
    if patch is None:
        return None
    state = _plan_one(tree, patch, _options(patch, list(model_types)), force, dict(current)).state
    return state if state == PRESENT else None  # not selected: it will not be applied in this run


def _check_ids(engine: str, patches: list[Patch], ids: list[str]) -> None:
    known = {p.id for p in patches}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise UsageError(
            f"unknown patch id {', '.join(unknown)} for {engine}",
            hint=f"known: {', '.join(sorted(known))} (compat patch --engine {engine} --status lists them)",
        )


def _plan_one(tree: EngineTree, patch: Patch, options: dict, force: bool, current: dict[str, bytes]) -> PlannedPatch:
    if not patch.applies_to(tree.version) and not (force and not tree.version):
        return PlannedPatch(patch, NOT_OFFERED, f"for {patch.engine} {version_range(patch.versions)}; this tree is {tree.version or 'of unknown version'}", options)
    try:
        files = patch.find_files(tree)
    except FileNotFoundError as err:
        if not tree.version:  # --force on a tree of unknown version: a patch whose files are not here is not for it
            return PlannedPatch(patch, NOT_OFFERED, f"version unknown and its files are not here: {err}", options)
        return PlannedPatch(patch, REFUSED, f"missing file: {err}", options)
    item = PlannedPatch(patch, PRESENT, options=options, files=sorted(set(files.values())))
    refusals = []
    for role, relpath in files.items():
        before = current.get(relpath)
        if before is None:
            before = tree.path(relpath).read_bytes()
        try:
            text = before.decode("utf-8")
        except UnicodeDecodeError:
            refusals.append(f"{relpath}: not UTF-8")
            continue
        try:
            if patch.has_fix(role, text, options):
                continue
            new = patch.transform(role, text, options)
        except FileNotAsExpected as err:
            refusals.append(f"{relpath}: {err.reason}")
            continue
        try:
            compile(new, relpath, "exec", dont_inherit=True)
        except SyntaxError as err:  # a bug in the patch, never the user's fault; say so plainly
            refusals.append(f"{relpath}: the patched text does not compile ({err.msg}, line {err.lineno}): a bug in patch {patch.id}")
            continue
        if new != text:
            item.edits.append(FileEdit(relpath, before, new.encode("utf-8")))
    if refusals and not (force and item.edits):
        return PlannedPatch(patch, REFUSED, "; ".join(refusals), options, item.files)
    if refusals:
        item.reason = "forced; left as they are: " + "; ".join(refusals)
    if item.edits:
        item.state = APPLY
    return item


def combined_edits(planned: list[PlannedPatch]) -> list[FileEdit]:
    """One edit per file: the bytes before the first patch and after the last."""
    by_file: dict[str, FileEdit] = {}
    for item in planned:
        if item.state != APPLY:
            continue
        for edit in item.edits:
            known = by_file.get(edit.relpath)
            by_file[edit.relpath] = FileEdit(edit.relpath, known.before if known else edit.before, edit.after)
    return list(by_file.values())


# -- record ------------------------------------------------------------------------------------------
def record_path(tree: EngineTree) -> Path:
    return tree.root / tree.engine / RECORD_NAME


def _sha(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_record(tree: EngineTree) -> dict | None:
    path = record_path(tree)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise RefusedError(f"{path}: cannot read the patch record ({err})",
                           hint="restore it from a backup, or reinstall the engine and delete the record") from None
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
        raise RefusedError(f"{path}: not a compat patch record of format {RECORD_FORMAT}",
                           hint="it was written by another compat version; use that version to revert")
    return data


def _write_record(tree: EngineTree, record: dict | None) -> None:
    path = record_path(tree)
    if record is None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    _write_atomic(path, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode())


def _new_record(tree: EngineTree) -> dict:
    return {
        "format": RECORD_FORMAT, "tool": "compat", "compat_version": __version__,
        "engine": tree.engine, "engine_version": tree.version, "tree": str(tree.root.resolve()),
        "patches": [], "files": {}, "pending": None,
    }


def _current(tree: EngineTree, relpath: str) -> bytes | None:
    try:
        return tree.path(relpath).read_bytes()
    except FileNotFoundError:
        return None


def applied_patches(tree: EngineTree) -> list[dict]:
    """The patches compat applied to this tree (for `compat probe`): [] when none or unreadable."""
    try:
        record = read_record(tree)
    except CompatError:
        return []
    if not record:
        return []
    files = record.get("files", {})
    intact = {rel: _sha(_current(tree, rel)) == info.get("sha256_after") for rel, info in files.items()}
    return [
        {
            "id": p["id"], "description": p.get("description", ""), "versions": p.get("versions"),
            "applied_at": p.get("applied_at"), "compat_version": p.get("compat_version"),
            "options": p.get("options", {}), "files": p.get("files", []),
            "intact": all(intact.get(rel, False) for rel in p.get("files", [])),
            "record": str(record_path(tree)),
        }
        for p in record.get("patches", [])
    ]


# -- files -------------------------------------------------------------------------------------------
def _write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one rename; a reader sees the old or the new file, never half."""
    try:
        st = path.stat()
    except FileNotFoundError:
        st = None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".compat-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            if hasattr(os, "geteuid") and os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
                with contextlib.suppress(OSError):
                    os.chown(tmp, st.st_uid, st.st_gid)  # root patching a user's venv keeps the user's files
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _drop_bytecode(path: Path) -> list[str]:
    """Remove `__pycache__/<stem>.*.pyc` beside `path`: none may shadow the new source."""
    removed = []
    cache = path.parent / "__pycache__"
    for pyc in cache.glob(f"{path.stem}.*.pyc"):
        with contextlib.suppress(FileNotFoundError):
            pyc.unlink()
            removed.append(str(pyc))
    return removed


def _check_writable(tree: EngineTree, relpaths: list[str]) -> None:
    targets = [tree.path(r) for r in relpaths] + [record_path(tree)]
    for path in targets:
        if path.is_symlink():  # replacing it would cut the link; writing through it would patch another tree
            raise RefusedError(
                f"{path} is a symbolic link (to {os.path.realpath(path)}); nothing was changed",
                hint="patch the tree it points to (--path DIR), or replace the link by a copy first",
            )
        for candidate in (path, path.parent):
            if candidate.exists() and not os.access(candidate, os.W_OK):
                raise _read_only(candidate)


def _read_only(path: Path, err: OSError | None = None) -> RefusedError:
    try:
        owner = path.owner()
    except (KeyError, OSError, NotImplementedError):
        owner = "its owner"
    why = f" ({err.strerror})" if err is not None and err.strerror else ""
    return RefusedError(
        f"{path} is not writable{why}; nothing was changed",
        hint=f"run compat patch as the user that owns the engine's files ({owner}), e.g. with sudo -u {owner}, "
        "or, for an engine installed system-wide, with sudo; a read-only image needs a writable copy (--path DIR)",
    )


@contextlib.contextmanager
def tree_lock(tree: EngineTree, timeout: float | None = None, notify=None):
    """An exclusive flock on the package directory: one compat patch run per tree at a time.

    The directory itself is locked, so no lock file is left in site-packages.
    """
    timeout = LOCK_TIMEOUT if timeout is None else timeout
    package = tree.root / tree.engine
    fd = os.open(package, os.O_RDONLY)
    try:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RefusedError(
                        f"another compat patch run holds {package} (waited {timeout:.0f} s); nothing was changed",
                        hint="let it finish, then run again",
                    ) from None
                if notify and not told:
                    notify(f"waiting for another compat patch run on {package} ...")
                    told = True
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# -- apply / revert ----------------------------------------------------------------------------------
def recover(tree: EngineTree, record: dict | None, force: bool = False) -> tuple[dict | None, list[str]]:
    """Finish a run that died between its writes: put back the files it had replaced.

    Returns (the committed record, messages). Call with the lock held.
    """
    if not record or not record.get("pending"):
        return record, []
    pending = record["pending"]
    restored = []
    for relpath, info in pending["files"].items():
        for leftover in tree.path(relpath).parent.glob(f".{tree.path(relpath).name}.*.compat-tmp"):
            with contextlib.suppress(OSError):
                leftover.unlink()  # a temp file the killed run had not renamed yet
        now = _sha(_current(tree, relpath))
        if now == info["sha256_before"]:
            continue
        if now != info["sha256_after"] and not force:
            raise RefusedError(
                f"{relpath} changed after an interrupted compat patch run (neither its old nor its new content)",
                hint="inspect it; --force puts back the content it had before that run",
            )
        _write_atomic(tree.path(relpath), base64.b64decode(info["previous_base64"]))
        _drop_bytecode(tree.path(relpath))
        restored.append(relpath)
    record = dict(record, pending=None)
    if not record.get("patches"):
        record = None
    _write_record(tree, record)
    msg = f"an earlier run was interrupted (started {pending.get('started_at')}); rolled it back"
    return record, [msg + (f": restored {', '.join(restored)}" if restored else ": no file had been changed yet")]


def check_record(tree: EngineTree, record: dict | None, force: bool) -> tuple[dict | None, list[str]]:
    """Refuse when a recorded file changed since compat wrote it; forget a record the engine outlived."""
    if not record:
        return record, []
    files = record.get("files", {})
    now = {rel: _sha(_current(tree, rel)) for rel in files}
    if files and all(now[rel] == info["sha256_before"] for rel, info in files.items()):
        _write_record(tree, None)  # every file is the original again: the engine was reinstalled
        return None, [f"the engine's files are back to their originals (reinstalled?): forgot the stale record {record_path(tree)}"]
    changed = [rel for rel, info in files.items() if now[rel] != info["sha256_after"]]
    if changed and not force:
        raise RefusedError(
            f"changed since compat patched them: {', '.join(changed)}; nothing was changed",
            hint="a hand edit or a partial reinstall; inspect them, then --revert --force restores the originals "
            "(or pass --force to patch over them)",
        )
    return record, []


def apply(tree: EngineTree, planned: list[PlannedPatch], record: dict | None) -> tuple[dict, list[FileEdit]]:
    """Write the planned edits all-or-nothing and commit the record. Call with the lock held."""
    edits = combined_edits(planned)
    if not edits:
        return record or {}, []
    _check_writable(tree, [e.relpath for e in edits])
    base = record or _new_record(tree)
    started = _now()
    pending = {
        "started_at": started,
        "files": {
            e.relpath: {"sha256_before": _sha(e.before), "sha256_after": _sha(e.after),
                        "previous_base64": base64.b64encode(e.before).decode()}
            for e in edits
        },
    }
    written: list[FileEdit] = []
    try:
        _write_record(tree, dict(base, pending=pending))
        for edit in edits:
            _write_atomic(tree.path(edit.relpath), edit.after)
            written.append(edit)
            _drop_bytecode(tree.path(edit.relpath))
        committed = _commit(tree, base, planned, edits, started)
        _write_record(tree, committed)
    except BaseException as err:
        _roll_back(tree, written, base if record else None)
        if isinstance(err, PermissionError) or (isinstance(err, OSError) and err.errno in (13, 30)):
            raise _read_only(Path(err.filename or tree.root), err) from None
        raise
    return committed, edits


def _roll_back(tree: EngineTree, written: list[FileEdit], record: dict | None) -> None:
    for edit in reversed(written):
        with contextlib.suppress(OSError):
            _write_atomic(tree.path(edit.relpath), edit.before)
            _drop_bytecode(tree.path(edit.relpath))
    with contextlib.suppress(OSError):
        _write_record(tree, record)


def _commit(tree: EngineTree, base: dict, planned: list[PlannedPatch], edits: list[FileEdit], when: str) -> dict:
    record = json.loads(json.dumps(base))  # a copy
    record.update(compat_version=__version__, engine_version=tree.version, pending=None)
    for edit in edits:
        known = record["files"].get(edit.relpath)
        if known:  # a file patched before keeps its first original
            known["sha256_after"] = _sha(edit.after)
        else:
            record["files"][edit.relpath] = {
                "sha256_before": _sha(edit.before), "sha256_after": _sha(edit.after),
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


def revert(tree: EngineTree, record: dict, force: bool) -> list[str]:
    """Put back every recorded file byte for byte and remove the record. Call with the lock held."""
    files = record.get("files", {})
    todo: list[tuple[str, bytes, bytes | None]] = []  # (relpath, original, current)
    for relpath, info in files.items():
        now = _current(tree, relpath)
        digest = _sha(now)
        if digest == info["sha256_before"]:
            continue  # already the original (a revert that was interrupted, or a reinstall)
        if digest != info["sha256_after"] and not force:
            raise RefusedError(
                f"{relpath} changed since compat patched it; nothing was reverted",
                hint="inspect it (a hand edit? an upgrade?); --revert --force puts back the original anyway",
            )
        todo.append((relpath, base64.b64decode(info["original_base64"]), now))
    _check_writable(tree, [t[0] for t in todo])
    done: list[tuple[str, bytes, bytes | None]] = []
    try:
        for relpath, original, now in todo:
            _write_atomic(tree.path(relpath), original)
            done.append((relpath, original, now))
            _drop_bytecode(tree.path(relpath))
        _write_record(tree, None)
    except BaseException as err:
        for relpath, _, now in reversed(done):  # all or nothing: put the patched files back
            if now is not None:
                with contextlib.suppress(OSError):
                    _write_atomic(tree.path(relpath), now)
        if isinstance(err, PermissionError) or (isinstance(err, OSError) and err.errno in (13, 30)):
            raise _read_only(Path(err.filename or tree.root), err) from None
        raise
    return [t[0] for t in todo]


def version_range(spec) -> str:
    """`>=0.10.1,<=0.17.1` with the lower bound first (SpecifierSet sorts them as text)."""
    return ",".join(sorted((str(s) for s in spec), key=lambda s: (not s.startswith(">"), s)))
