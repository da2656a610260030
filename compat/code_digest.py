"""The digest of the code that computes a value (the probes, the patches): a facts cache key is made of it.

`code_files(follow, content)` lists the files: every file under `follow`'s packages and, transitively, every compat
module they import (found by reading their import lines, not by importing them), plus `content`'s own files.
`code_digest` is the sha256 over their labels and bytes. Reading and hashing them costs more than the rest of a warm
`compat probe` (over 100 files), so the digest is also kept in a small record with each file's size, mtime, ctime and
inode and the mtime of every folder walked (a file added or removed changes its folder's): while every one of them is
the same, the digest is the same, and it is read from the record (git's index rule; a file younger than
RACY_SECONDS when the record is written is not trusted to it, as facts.py does for trees).
"""

from __future__ import annotations

import functools
import json
import os
import time
from pathlib import Path

from compat.core.hashing import sha256

__all__ = ["PROBE_CODE", "PROBE_FILES", "code_digest", "code_files", "RACY_SECONDS"]

PROBE_CODE = ("compat.probes",)  # the probes, and what they import from compat
PROBE_FILES = ("compat.report",)  # how their answers become a report
RACY_SECONDS = 2.0
_RECORD_FORMAT = 1


@functools.lru_cache(maxsize=None)
def _spec(name: str):
    """The import spec of `compat.<x>` (mapped folders like probes/ included), without importing it."""
    import importlib.util

    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


@functools.lru_cache(maxsize=None)
def _module_file(name: str) -> str | None:
    """The file of module `name` (a package's __init__.py); None when it is not a module of compat."""
    parts = name.split(".")
    if parts[0] != "compat":
        return None
    spec = _spec(".".join(parts[:2]))
    if spec is None:
        return None
    if not spec.submodule_search_locations:  # a plain module: nothing below it
        return spec.origin if len(parts) <= 2 else None
    path = os.path.join(list(spec.submodule_search_locations)[0], *parts[2:])
    if len(parts) > 2 and os.path.isfile(path + ".py"):
        return path + ".py"
    init = os.path.join(path, "__init__.py")
    return init if os.path.isfile(init) else None


def _imports_of(data: bytes) -> set[str]:
    """Every `compat...` name an `import` / `from ... import` line of this source names (module or attribute)."""
    names: set[str] = set()
    pos = data.find(b"compat")
    while pos != -1:
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        end = len(data) if end == -1 else end
        line = data[start:end].split(b"#", 1)[0].strip()
        if line.startswith(b"import "):
            names.update(part.split(b" as ")[0].strip().decode() for part in line[7:].split(b","))
        elif line.startswith(b"from compat") and b" import " in line:
            raw_module, imported = line[5:].split(b" import ", 1)
            if imported.strip().startswith(b"(") and b")" not in imported:  # a list over several lines
                close = data.find(b")", end)
                close = len(data) if close == -1 else close
                imported += b"," + data[end:close]
                end = close
            module = raw_module.strip().decode()
            names.add(module)
            for item in imported.replace(b"(", b",").replace(b")", b",").replace(b"\n", b",").split(b","):
                word = item.split(b"#", 1)[0].split(b" as ")[0].strip()
                if word and word != b"*":
                    names.add(f"{module}.{word.decode()}")
        pos = data.find(b"compat", end)
    return {name for name in names if name.startswith("compat")}


def code_files(follow: tuple[str, ...] = PROBE_CODE, content: tuple[str, ...] = PROBE_FILES) -> dict[str, str]:
    """{label: path} of the code that computes a value; labels are module names and relative paths.

    See `_collect` for what counts.
    """
    return {label: path for label, (path, _) in _collect(follow, content).items()}


def _collect(follow: tuple[str, ...], content: tuple[str, ...], folders: set[str] | None = None
             ) -> dict[str, tuple[str, bytes]]:
    """{label: (path, bytes)} of the code that computes a value.

    `follow`: modules or packages (a package: every file under it) whose source counts, and so does the
    source of every compat module they import, transitively (found by reading import lines, not by
    importing); the `__init__.py` of such a module's parent packages counts too, without following its
    imports. `content`: modules whose own source counts, without following their imports.
    """
    items: list[tuple[str, str, bool]] = []
    for root, expand in [*((r, True) for r in follow), *((r, False) for r in content)]:
        path = _module_file(root)
        if path is None:
            raise ValueError(f"facts: no module {root!r} to digest")
        if not expand or not path.endswith("__init__.py"):
            items.append((root, path, expand))
            continue
        folder = os.path.dirname(path)
        for dirpath, dirnames, filenames in os.walk(folder):
            if folders is not None:
                folders.add(dirpath)  # a file added or removed changes its mtime
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            rel = os.path.relpath(dirpath, folder)
            items.extend((f"{root}/{rel}/{name}", os.path.join(dirpath, name), True)
                         for name in sorted(filenames) if not name.endswith((".pyc", ".pyo")))
    found: dict[str, tuple[str, bytes]] = {}
    seen = {path for _, path, _ in items}
    seen_names: set[str] = set()
    while items:
        label, path, expand = items.pop(0)
        with open(path, "rb") as handle:
            data = handle.read()
        found[label] = (path, data)
        if not expand or not path.endswith(".py"):
            continue
        for name in sorted(_imports_of(data) - seen_names):
            seen_names.add(name)
            parts = name.split(".")
            for depth in range(1, len(parts) + 1):
                module = ".".join(parts[:depth])
                path_of = _module_file(module)
                if path_of is not None and path_of not in seen:
                    seen.add(path_of)
                    # the imported module is followed; a parent package's __init__ only counts
                    items.append((module, path_of, depth == len(parts) or not path_of.endswith("__init__.py")))
    return found


@functools.lru_cache(maxsize=16)
def code_digest(follow: tuple[str, ...] = PROBE_CODE, content: tuple[str, ...] = PROBE_FILES) -> str:
    """sha256 over `code_files(follow, content)`: their labels and bytes (not where they are installed); read from
    the record of the last computation while none of its files and folders changed (see the module's docstring)."""
    record = _record_path(follow, content)
    kept = _kept(record) if record is not None else None
    if kept is not None:
        return kept
    folders: set[str] = set()
    found = _collect(follow, content, folders)
    digest = sha256()
    for label, (_, data) in sorted(found.items()):
        digest.update(f"{label}\0{len(data)}\0".encode() + data)
    if record is not None:
        _keep(record, [path for path, _ in found.values()], folders, digest.hexdigest())
    return digest.hexdigest()


def _record_path(follow: tuple[str, ...], content: tuple[str, ...]) -> str | None:
    """Where the record of this digest lives (beside the facts: COMPAT_FACTS_DIR or the cache's facts/), None when the
    facts cache is off. Keyed by what is digested and where its roots are installed."""
    if os.environ.get("COMPAT_FACTS_CACHE", "").lower() in ("0", "off", "no", "false"):
        return None
    roots = [_module_file(root) for root in (*follow, *content)]
    key = sha256(json.dumps([_RECORD_FORMAT, follow, content, roots]).encode()).hexdigest()[:32]
    moved = os.environ.get("COMPAT_FACTS_DIR")
    if moved:
        home = os.path.join(os.path.expanduser(moved), "code")
    else:
        from compat.sources.cache import cache_root

        home = os.path.join(str(cache_root()), "facts", "code")
    return os.path.join(home, f"digest-{key}.json")


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _kept(record: str) -> str | None:
    """The recorded digest when every file and folder it was made from is as recorded, else None."""
    try:
        with open(record, "rb") as handle:
            kept = json.loads(handle.read())
        stamps = kept["stamps"]
        if kept.get("format") != _RECORD_FORMAT or not isinstance(stamps, dict) or not isinstance(kept["digest"], str):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for path, stamp in stamps.items():
        if _stamp(path) != stamp:
            return None
    return kept["digest"]


def _keep(record: str, files: list[str], folders: set[str], digest: str) -> None:
    """Write the record, unless a file or folder is too young to be told apart from its next edit by its times."""
    stamps = {path: _stamp(path) for path in sorted({*files, *folders, *(os.path.dirname(f) for f in files)})}
    newest = max((stamp[1] for stamp in stamps.values() if stamp is not None), default=0)
    if any(stamp is None for stamp in stamps.values()) or time.time_ns() - newest < RACY_SECONDS * 1e9:
        return
    from compat.sources.cache import atomic_write

    try:
        atomic_write(Path(record), json.dumps({"format": _RECORD_FORMAT, "digest": digest, "stamps": stamps}))
    except OSError:  # a read-only or full cache: computed again next time
        pass
