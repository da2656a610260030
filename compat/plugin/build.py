"""What the plugin carries: the patched source of each module, computed by compat's own transforms.

`build_data(tree, ...)` runs the same plan as `compat patch` (compat.patching.plan: each selected
patch's find_files / has_fix / transform on the installed tree, the result compiled) and keeps,
per module, the sha256 of the original file, the patched source and its sha256. Nothing is
written to the engine. The runtime (runtime.py, in the serving venv) trusts a module's patched
source only while every file of its group still has its original hash: patches that share a file
or build on one another form one group and apply all together or not at all.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

from compat import __version__
from compat.core.errors import RefusedError
from compat.patch_record import read_record
from compat.patching import APPLY, BLOCKED, NOT_OFFERED, PRESENT, REFUSED, PlannedPatch, combined_edits, plan, version_range
from compat.sources.version import version_assignment, version_files
from compat.core.tree import EngineTree

DATA_FORMAT = 1  # runtime.DATA_FORMAT: the runtime refuses data of another format


def plan_patches(tree: EngineTree, select: list[str], skip: list[str], options: dict) -> list[PlannedPatch]:
    """The one call of compat.patching.plan. `options` are the patch options of the command line, by dest."""
    return plan(tree, select=select, skip=skip, options=options, record=_record(tree))


def _record(tree: EngineTree) -> dict | None:
    try:
        return read_record(tree)
    except RefusedError:
        return None


def module_name(relpath: str) -> str:
    """vllm/v1/attention/backends/cpu_attn.py -> vllm.v1.attention.backends.cpu_attn; a package's __init__ -> the package."""
    parts = relpath[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def refusal(planned: list[PlannedPatch], select: list[str]) -> str | None:
    """Why nothing may be installed (the same all-or-nothing rule as compat patch), or None."""
    bad = [f"{p.patch.id} {p.state}: {p.reason}" for p in planned if p.state in (REFUSED, BLOCKED)]
    bad += [f"{p.patch.id} was selected but is not offered here: {p.reason}" for p in planned if select and p.state == NOT_OFFERED]
    if bad:
        return "; ".join(bad)
    if not any(p.state == APPLY for p in planned):
        present = [f"{p.patch.id} ({'applied on disk by compat patch' if p.applied_by_compat else 'already in this release'})"
                   for p in planned if p.state == PRESENT]
        return "nothing to apply in memory" + (f": {', '.join(present)}" if present else ": no patch is offered for this release")
    return None


def groups(planned: list[PlannedPatch]) -> list[list[str]]:
    """Patch ids that must apply together: they edit a common file or one requires the other."""
    applied = [p for p in planned if p.state == APPLY]
    parent = {p.patch.id: p.patch.id for p in applied}

    def find(pid: str) -> str:
        while parent[pid] != pid:
            pid = parent[pid]
        return pid

    by_file: dict[str, str] = {}
    for item in applied:
        for edit in item.edits:
            if edit.relpath in by_file:
                parent[find(item.patch.id)] = find(by_file[edit.relpath])
            by_file.setdefault(edit.relpath, item.patch.id)
        for required in item.patch.requires:
            if required in parent:
                parent[find(item.patch.id)] = find(required)
    out: dict[str, list[str]] = {}
    for item in applied:
        out.setdefault(find(item.patch.id), []).append(item.patch.id)
    return list(out.values())


def version_guard(tree: EngineTree, *, elsewhere: bool = False) -> dict:
    """What the runtime checks to know it runs on the release it was built for: the hash of the
    engine's version file, else (no such file) the installed distribution's version. `elsewhere`: the plugin runs on
    another build of the release (an image's, built from the release on the index: compat plugin manifest), whose
    version file holds its own commit id; the version it says is checked (each patched file's hash still is)."""
    for rel in version_files(tree.engine):
        if not tree.exists(rel):
            continue
        try:
            found = version_assignment(tree.parse(rel))
        except Exception:  # noqa: BLE001 - an unparseable version file is just not a guard
            found = None
        if found and elsewhere:
            return {"version_file": {"file": rel, "says": found[0]}}
        if found:
            return {"version_file": {"file": rel, "sha256": sha256(tree.read_bytes(rel)), "says": found[0]}}
    distribution = tree.source.detail.get("distribution")
    if distribution and tree.version:
        return {"distribution": {"name": distribution, "version": tree.version}}
    raise RefusedError(
        f"{tree.root / tree.engine}: no version file ({' or '.join(version_files(tree.engine))}) and no distribution: "
        "the plugin could not tell at import time that it runs on the release it was built for",
        hint="install the engine as a distribution (pip install), or point --path at a tree with its version file",
    )


def process_env(tree: EngineTree, relpath: str) -> dict[str, str]:
    """Environment a patched module sets in the engine process (only variables not set already).

    vLLM keys its torch.compile cache by the bytes on disk of the files dynamo traced
    (`compilation_config.traced_files`, read back with open() in vllm/compilation/backends.py), so a
    model module patched in memory would share cache entries with the unpatched file, in both
    directions. Where the tree keys its cache that way and has the switch, the plugin turns the
    compile cache off in the processes that run a patched model module (a vLLM model module: no other tree has one)."""
    if not relpath.startswith("vllm/model_executor/"):
        return {}
    keyed_by_files = any(b"traced_files" in tree.read_bytes(f) and b"open(" in tree.read_bytes(f)
                         for f in tree.grep("traced_files", under="vllm/compilation"))
    switch = tree.exists("vllm/envs.py") and b"VLLM_DISABLE_COMPILE_CACHE" in tree.read_bytes("vllm/envs.py")
    return {"VLLM_DISABLE_COMPILE_CACHE": "1"} if keyed_by_files and switch else {}


def build_data(tree: EngineTree, planned: list[PlannedPatch], *, python: str, options: dict, elsewhere: bool = False) -> dict:
    """plugin.json: everything the runtime needs, nothing it would have to compute."""
    patch_groups = groups(planned)
    group_of = {pid: index for index, ids in enumerate(patch_groups) for pid in ids}
    patches_of: dict[str, list[str]] = {}
    for item in planned:
        if item.state == APPLY:
            for edit in item.edits:
                patches_of.setdefault(edit.relpath, []).append(item.patch.id)
    modules = {}
    for edit in combined_edits(planned):
        source = edit.after.decode("utf-8")
        compile(source, edit.relpath, "exec", dont_inherit=True)  # plan compiled each step; the chain too
        modules[module_name(edit.relpath)] = {
            "file": edit.relpath, "patches": patches_of[edit.relpath], "group": group_of[patches_of[edit.relpath][0]],
            "sha256_original": sha256(edit.before), "sha256_patched": sha256(edit.after), "source": source,
            "env": process_env(tree, edit.relpath),
        }
    return {
        "format": DATA_FORMAT, "tool": "compat", "compat_version": __version__,
        "engine": tree.engine, "distribution": tree.source.detail.get("distribution"), "engine_version": tree.version,
        "root": str(tree.root.resolve()), "source": tree.source.to_json(), "python": python,
        "installed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "options": {k: list(v) for k, v in options.items()},
        "guard": version_guard(tree, elsewhere=elsewhere),
        "patches": [
            {"id": p.patch.id, "description": p.patch.description, "versions": version_range(p.patch.versions),
             "options": p.to_json()["options"], "files": [e.relpath for e in p.edits], "group": group_of[p.patch.id]}
            for p in planned if p.state == APPLY
        ],
        "groups": [{"patches": ids, "files": sorted({e.relpath for p in planned if p.patch.id in ids for e in p.edits})}
                   for ids in patch_groups],
        "modules": modules,
    }
