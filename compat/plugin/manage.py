"""install / status / remove: the plugin's life cycle in one environment (no argparse, no rich)."""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
import sys
from pathlib import Path

from compat.errors import RefusedError, UsageError
from compat.plugin import dist
from compat.tree import ENGINES, EngineTree


def install(tree: EngineTree, *, python: str | None, select: list[str], skip: list[str], options: dict) -> dict:
    """Build the plugin for `tree` and write it into `python`'s site-packages. Nothing of the engine is written."""
    if tree.source.kind == "released":
        raise UsageError(
            f"{tree.engine} {tree.version} from the package index is not an environment: the plugin goes where the engine runs",
            hint=f"compat plugin install --engine {tree.engine} --python /path/to/serving-venv/bin/python",
        )
    if not tree.version:
        raise RefusedError(f"cannot tell which {tree.engine} version {tree.root} is; patches are pinned to versions",
                           hint="point --path at a tree with its version file, or install the engine as a distribution")
    from compat.plugin import build  # the patch registry and libcst: only to install

    planned = build.plan_patches(tree, select, skip, options)
    why = build.refusal(planned, select)
    if why:
        raise RefusedError(f"{tree.engine} {tree.version} at {tree.root}: {why}; nothing was installed",
                           hint="compat patch --status lists what each patch would do here")
    exe = python or sys.executable
    site = dist.site_packages(exe)
    data = build.build_data(tree, planned, python=str(exe), options=options)
    dist.check_writable(site)
    with dist.site_lock(site):
        replaced = dist.is_installed(site, tree.engine)
        files = dist.write(site, tree.engine, data)
    notes = []
    origin = imported_from(exe, tree.engine)
    if origin is None or not Path(origin).resolve().is_relative_to((tree.root / tree.engine).resolve()):
        notes.append(f"{exe} imports {tree.engine} from {origin or 'nowhere'}, not from {tree.root / tree.engine}: "
                     "the plugin leaves any other tree alone (point --path at the tree it imports)")
    return {"action": "install", "site_packages": str(site), "replaced": replaced, "files": files, "notes": notes,
            "plan": [p.to_json() for p in planned], **summary(data)}


def imported_from(python: str, engine: str) -> str | None:
    """The `__init__.py` `python` would import the engine from (found, not imported), or None."""
    code = f"import importlib.util; s = importlib.util.find_spec({engine!r}); print(s.origin if s and s.origin else '')"
    try:
        proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    except (OSError, subprocess.SubprocessError):
        return None
    lines = proc.stdout.strip().splitlines()
    return lines[-1] if proc.returncode == 0 and lines and lines[-1] else None


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


def state(tree: EngineTree, site_dirs: list[str | Path] = ()) -> dict | None:
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


def status(engine: str, python: str | None) -> dict:
    """What is installed in `python`'s environment, and what its hook would do there (asked of that python)."""
    exe = python or sys.executable
    site = dist.site_packages(exe)
    data = dist.read_data(site, engine)
    out = {"action": "status", "engine": engine, "python": str(exe), "site_packages": str(site),
           "installed": data is not None or dist.is_installed(site, engine), "files": dist.listing(site, engine)}
    if data is None:
        return out
    if "damaged" in data:
        return {**out, "damaged": data["damaged"]}
    out.update({k: v for k, v in summary(data).items() if k != "python"})
    out["modules"] = module_states(data)
    out["live"] = live_check(exe, engine)
    return out


def live_check(python: str, engine: str) -> dict:
    """Ask the environment itself: is the hook on sys.meta_path at start-up, and what would it do per module?"""
    code = f"import json, {dist.package_name(engine)} as p; print(json.dumps(p.diagnose()))"
    try:
        proc = subprocess.run([str(python), "-E", "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    except (OSError, subprocess.SubprocessError) as err:
        return {"error": f"could not run {python}: {err}"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": f"{python} could not import {dist.package_name(engine)}: {proc.stderr.strip()[-300:]}"}


def remove(engine: str, python: str | None) -> dict:
    exe = python or sys.executable
    site = dist.site_packages(exe)
    with dist.site_lock(site):
        if not dist.listing(site, engine):
            return {"action": "remove", "engine": engine, "site_packages": str(site), "removed": []}
        dist.check_writable(site)
        removed = dist.remove(site, engine)
    return {"action": "remove", "engine": engine, "site_packages": str(site), "removed": removed}


def installed_plugins(python: str | None = None) -> list[dict]:
    """Every compat plugin in `python`'s environment (default: this interpreter), for `compat env`:
    [{"engine", "site_packages", "engine_version", "patches", "modules" (with hash states), ...}]."""
    site = dist.site_packages(python)
    out = []
    for engine in ENGINES:
        data = dist.read_data(site, engine)
        if data is None:
            continue
        if "damaged" in data:
            out.append({"engine": engine, "site_packages": str(site), "damaged": data["damaged"]})
            continue
        out.append({"site_packages": str(site), **summary(data), "modules": module_states(data)})
    return out


def plugin_command(engine: str, ids: list[str], model_types: list[str] = (), *, python: str | None = None,
                   path: str | None = None) -> str:
    """The `compat plugin install` line for a fix (what doctor prints beside `compat patch`)."""
    parts = ["compat", "plugin", "install", "--engine", engine]
    if path:
        parts += ["--path", str(path)]
    if python:
        parts += ["--python", str(python)]
    for pid in ids:
        parts += ["--select", pid]
    for mt in model_types:
        parts += ["--model-type", mt]
    return shlex.join(parts)
