"""install / status / remove: the plugin's life cycle in one environment (no argparse, no rich)."""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path
from typing import Any, Sequence

from compat import engines
from compat.core.errors import RefusedError, UsageError
from compat.core.interpreter import Interpreter, InterpreterError, InterpreterFailed
from compat.plugin import dist
from compat.core.tree import EngineTree


def install(tree: EngineTree, *, python: Interpreter | str | None, select: list[str], skip: list[str],
            options: dict[str, Any], target: str | Path | None = None) -> dict[str, Any]:
    """Build the plugin for `tree` and write it into `python`'s site-packages (a python or a venv directory;
    default: this interpreter), or into `target`, a directory of its own that the serving processes get on their
    PYTHONPATH (an init container's shared volume: compat/plugin/kubernetes.py). Nothing of the engine is written."""
    if tree.source.kind == "released":
        raise UsageError(
            f"{tree.engine} {tree.version} from the package index is not an environment: the plugin goes where the engine runs",
            hint=f"compat plugin install --engine {tree.engine} --python /path/to/serving-venv/bin/python",
        )
    if not tree.version:
        raise RefusedError(f"cannot tell which {tree.engine} version {tree.root} is; patches are pinned to versions",
                           hint="point --path at a tree with its version file, or install the engine as a distribution")
    from compat.patching import tree_lock
    from compat.plugin import build  # the patch registry and libcst: only to install

    exe = Interpreter.of(python)
    target = None if target is None else Path(target)
    site = dist.site_packages(exe) if target is None else target
    if target is not None:
        _make_target(target)
    with tree_lock(tree, shared=True):  # a compat patch run on this tree is never seen half-way
        planned = build.plan_patches(tree, select, skip, options)
        why = build.refusal(planned, select)
        if why:
            raise RefusedError(f"{tree.engine} {tree.version} at {tree.root}: {why}; nothing was installed",
                               hint="compat patch --status lists what each patch would do here")
        data = build.build_data(tree, planned, python=exe.path, options=options)
    dist.check_writable(site)
    with dist.site_lock(site):
        replaced = dist.is_installed(site, tree.engine)
        files = dist.write(site, tree.engine, data)
        if target is not None:
            files.append(dist.write_sitecustomize(target))
    notes = []
    origin = imported_from(exe, tree.engine)
    if origin is None or not Path(origin).resolve().is_relative_to((tree.root / tree.engine).resolve()):
        notes.append(f"{exe} imports {tree.engine} from {origin or 'nowhere'}, not from {tree.root / tree.engine}: "
                     "the plugin leaves any other tree alone (point --path at the tree it imports)")
    return {"action": "install", "site_packages": str(site), "replaced": replaced, "files": files, "notes": notes,
            "plan": [p.to_json() for p in planned], **summary(data)}


def bake(tree: EngineTree, *, python: str, site: str, select: list[str], skip: list[str],
         options: dict[str, Any]) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The plugin's files for another machine (compat plugin manifest: a pod's volume at `site`, run by the image's
    `python`), built here on `tree` (the release the image's tag names, from the package index, or a copy of the
    image's engine): nothing is written. At run time each patched file's hash must match, and the version file must
    say the same version (the image's build writes its own commit id into it)."""
    from compat.plugin import build

    if not tree.version:
        raise RefusedError(f"cannot tell which {tree.engine} version {tree.root} is; patches are pinned to versions",
                           hint=f"name the image's release: --image with a release tag, or --path to a tree with its version file")
    planned = build.plan_patches(tree, select, skip, options)
    why = build.refusal(planned, select)
    if why:
        raise RefusedError(f"{tree.engine} {tree.version}: {why}; nothing was written",
                           hint="compat patch --status --engine ENGINE==VERSION lists what each patch would do there")
    data = build.build_data(tree, planned, python=python, options=options, elsewhere=True)
    return dist.files_of(Path(site), tree.engine, data), {"plan": [p.to_json() for p in planned], **summary(data)}


def check_target(target: str | Path | None) -> None:
    """--target DIR, checked before the engine is looked for: a file there is the wrong kind of path (4)."""
    if target is not None and Path(target).exists() and not Path(target).is_dir():
        raise RefusedError(f"--target {target}: a file, not a directory", hint="name a directory (it is made when missing)")


def _make_target(target: Path) -> None:
    """--target DIR, made when missing; a file there is the wrong kind of path (4), with nothing written."""
    check_target(target)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise RefusedError(f"--target {target}: a file, not a directory", hint="name a directory (it is made when missing)") from None
    except OSError as err:
        raise RefusedError(f"--target {target}: cannot create it ({err.strerror})", hint="name a writable directory") from None


def imported_from(python: Interpreter | str, engine: str) -> str | None:
    """The `__init__.py` `python` would import the engine from (found, not imported), or None."""
    code = (f"import importlib.util, json; s = importlib.util.find_spec({engine!r}); "
            "print(json.dumps(s.origin if s and s.origin else None))")
    try:
        origin = Interpreter.of(python).run_json(code, what=f"ask it where it imports {engine} from")
    except InterpreterError:
        return None
    return origin if isinstance(origin, str) and origin else None


def summary(data: dict) -> dict:
    keys = ("engine", "distribution", "engine_version", "root", "python", "installed_at", "compat_version", "guard")
    return {
        **{k: data.get(k) for k in keys},
        "patches": [{k: p[k] for k in ("id", "description", "versions", "options", "files")} for p in data.get("patches", [])],
        "modules": {name: {"file": m["file"], "patches": m["patches"], "sha256_original": m["sha256_original"], "env": m.get("env", {})}
                    for name, m in data.get("modules", {}).items()},
    }


def module_states(data: dict, root: str | Path | None = None) -> dict[str, dict]:
    """Per module: does the file on disk still have the hash the plugin was built on?"""
    base = Path(root or data.get("root") or ".")
    out = {}
    for name, entry in sorted(data.get("modules", {}).items()):
        try:
            now = hashlib.sha256((base / entry["file"]).read_bytes()).hexdigest()
        except OSError:
            now = None
        state = ("matches" if now == entry.get("sha256_original") else "patched-on-disk" if now == entry.get("sha256_patched")
                 else "missing" if now is None else "changed")
        out[name] = {"file": entry["file"], "patches": entry.get("patches", []), "hash": state}
    return out


def state(tree: EngineTree, site_dirs: Sequence[str | Path] = ()) -> dict[str, Any] | None:
    """The plugin installed beside this tree (its site-packages) or in `site_dirs`, for `compat probe`; None when none.

    Reads files only: no subprocess, no import of the engine."""
    for site in [tree.root, *map(Path, site_dirs)]:
        data = dist.read_data(Path(site), tree.engine)
        if data is None:
            continue
        if "damaged" in data:
            return {"installed": True, "site_packages": str(site), "damaged": data["damaged"]}
        modules = module_states(data, tree.root)  # what the hook checks: the files of the tree it imports from
        return {"installed": True, "site_packages": str(site), **summary(data), "modules": modules,
                "for_this_release": data.get("engine_version") == tree.version,
                "applies": all(m["hash"] == "matches" for m in modules.values()) and data.get("engine_version") == tree.version}
    return None


def status(engine: str, python: Interpreter | str | None) -> dict[str, Any]:
    """What is installed in `python`'s environment, and what its hook would do there (asked of that python)."""
    exe = Interpreter.of(python)
    site = dist.site_packages(exe)
    data = dist.read_data(site, engine)
    out = {"action": "status", "engine": engine, "python": exe.path, "site_packages": str(site),
           "installed": data is not None or dist.is_installed(site, engine), "files": dist.listing(site, engine)}
    if data is None:
        return out
    if "damaged" in data:
        return {**out, "damaged": data["damaged"]}
    out.update({k: v for k, v in summary(data).items() if k != "python"})
    out["modules"] = module_states(data)
    out["live"] = live_check(exe, engine)
    return out


def live_check(python: Interpreter | str, engine: str) -> dict[str, Any]:
    """Ask the environment itself: is the hook on sys.meta_path at start-up, and what would it do per module?"""
    exe = Interpreter.of(python)
    code = f"import json, {dist.package_name(engine)} as p; print(json.dumps(p.diagnose()))"
    try:
        answer: dict[str, Any] = exe.run_json(code, what=f"import {dist.package_name(engine)}")
    except InterpreterFailed as err:
        if err.started:  # it ran: the package would not import (or said nothing)
            return {"error": f"{exe.path} could not import {dist.package_name(engine)}: {err.stderr[-300:]}"}
        return {"error": f"could not run {exe.path}: {err.detail}"}
    except InterpreterError as err:
        return {"error": f"could not run {exe.path}: {err.message}"}
    return answer


def remove(engine: str, python: Interpreter | str | None) -> dict[str, Any]:
    site = dist.site_packages(python)
    with dist.site_lock(site):
        if not dist.listing(site, engine):
            return {"action": "remove", "engine": engine, "site_packages": str(site), "removed": []}
        dist.check_writable(site)
        removed = dist.remove(site, engine)
    return {"action": "remove", "engine": engine, "site_packages": str(site), "removed": removed}


def installed_plugins(python: Interpreter | str | None = None) -> list[dict[str, Any]]:
    """Every compat plugin in `python`'s environment (default: this interpreter), for `compat env`:
    [{"engine", "site_packages", "engine_version", "patches", "modules" (with hash states), ...}]."""
    site = dist.site_packages(python)
    out = []
    for engine in engines.names():
        data = dist.read_data(site, engine)
        if data is None:
            continue
        if "damaged" in data:
            out.append({"engine": engine, "site_packages": str(site), "damaged": data["damaged"]})
            continue
        out.append({"site_packages": str(site), **summary(data), "modules": module_states(data)})
    return out


def plugin_command(engine: str, ids: list[str], model_types: list[str] | tuple[str, ...] = (), *,
                   python: Interpreter | str | None = None, path: str | Path | None = None) -> str:
    """The `compat plugin install` line for a fix (what doctor prints beside `compat patch`)."""
    from compat.release_ref import INSTALLED, TREE, ReleaseRef

    where = ReleaseRef(engine, None, TREE if path else INSTALLED, str(python) if python else None,
                       str(path) if path else None)
    parts = ["compat", "plugin", "install", *where.args("plugin")]
    for pid in ids:
        parts += ["--select", pid]
    for mt in model_types:
        parts += ["--model-type", mt]
    return shlex.join(parts)
