"""The plan: what each patch of a tree's engine would do to it, computed in memory; nothing is written.

Every file is read through the tree (`tree.read_bytes`), so a plan of `tree.overlay({...})`
sees contents that exist only in memory (doctor applies patches that way, one by one).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from compat.core.errors import RefusedError, UsageError
from compat.patches import FileNotAsExpected, Patch, all_patches
from compat.patching.options import resolve_options
from compat.core.tree import EngineTree

# Plan states, as shown and as in --json.
APPLY = "apply"  # will change files
PRESENT = "present"  # the fix is there: applied by compat (see the record) or in this release upstream
NOT_OFFERED = "not-offered"  # the tree's version is outside the patch's VERSIONS
REFUSED = "refused"  # a file is missing or not what the patch expects
BLOCKED = "blocked"  # needs a patch that is skipped or refused


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


# -- the plan ------------------------------------------------------------------------------------
def plan(
    tree: EngineTree,
    *,
    select=(),
    skip=(),
    options: dict | None = None,
    force: bool = False,
    record: dict | None = None,
) -> list[PlannedPatch]:
    """What each patch of the tree's engine would do to it; reads files through `tree`, writes nothing.

    `options` are option values by dest name (`{"model_types": ["glm4_moe"]}`), for every patch
    whose OPTIONS has that key; `record` (compat.patch_record.read_record) tells which present
    fixes compat applied.
    """
    patches = all_patches(tree.engine)
    _check_ids(tree.engine, patches, [*select, *skip])
    recorded = {p["id"] for p in (record or {}).get("patches", [])}
    current: dict[str, bytes] = {}  # file contents as the plan goes (two patches may edit one file)
    planned: list[PlannedPatch] = []
    states: dict[str, str] = {}
    for patch in patches:
        if (select and patch.id not in select) or patch.id in skip:
            continue
        item = _plan_one(tree, patch, resolve_options(patch, options), force, current)
        if item.state == REFUSED and item.reason.startswith(MISSING) and patch.id not in select:
            # the tree does not have the files this patch is about (a model family it lacks, a trimmed tree):
            # not offered, said; asked for by name, it is refused
            item = PlannedPatch(patch, NOT_OFFERED, item.reason + " (not in this tree; --select it to be refused instead)",
                                item.options)
        item.applied_by_compat = item.state == PRESENT and patch.id in recorded
        missing = [
            r for r in (patch.requires if item.state == APPLY else ())
            if _required_state(tree, patches, r, states, options, force, current) not in (APPLY, PRESENT)
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


def _required_state(tree, patches, required: str, states: dict, options, force: bool, current: dict) -> str | None:
    """The state of a patch another one builds on: planned in this run, else is its fix in the tree already?"""
    if required in states:
        return states[required]
    patch = next((p for p in patches if p.id == required), None)
    if patch is None:
        return None
    state = _plan_one(tree, patch, resolve_options(patch, options), force, dict(current)).state
    return state if state == PRESENT else None  # not selected: it will not be applied in this run


def _check_ids(engine: str, patches: list[Patch], ids: list[str]) -> None:
    known = {p.id for p in patches}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise UsageError(
            f"unknown patch id {', '.join(unknown)} for {engine}",
            hint=f"known: {', '.join(sorted(known))} (compat patch --engine {engine} --status lists them)",
        )


def _read(tree: EngineTree, relpath: str) -> bytes:
    try:
        return tree.read_bytes(relpath)
    except OSError as err:
        raise RefusedError(f"{tree.path(relpath)}: cannot read it ({err.strerror or err}); nothing was changed",
                           hint="make it readable by this user (or run as the engine's owner), then run again") from None


MISSING = "missing file: "


def _plan_one(tree: EngineTree, patch: Patch, options: dict, force: bool, current: dict[str, bytes]) -> PlannedPatch:
    if not patch.applies_to(tree.version) and not (force and not tree.version):
        return PlannedPatch(patch, NOT_OFFERED, f"for {patch.engine} {version_range(patch.versions)}; this tree is {tree.version or 'of unknown version'}", options)
    try:
        files = patch.find_files(tree)
    except FileNotFoundError as err:
        if not tree.version:  # --force on a tree of unknown version: a patch whose files are not here is not for it
            return PlannedPatch(patch, NOT_OFFERED, f"version unknown and its files are not here: {err}", options)
        return PlannedPatch(patch, REFUSED, f"{MISSING}{err}", options)
    except OSError as err:  # a file of the tree it searched cannot be read
        raise RefusedError(f"{err.filename or tree.root}: cannot read it ({err.strerror or err}); nothing was changed",
                           hint="make the engine's files readable by this user (or run as their owner), then run again") from None
    item = PlannedPatch(patch, PRESENT, options=options, files=sorted(set(files.values())))
    refusals = []
    for role, relpath in files.items():
        before = current.get(relpath)
        if before is None:
            before = _read(tree, relpath)
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


def version_range(spec) -> str:
    """`>=0.10.1,<=0.17.1` with the lower bound first (SpecifierSet sorts them as text)."""
    return ",".join(sorted((str(s) for s in spec), key=lambda s: (not s.startswith(">"), s)))
