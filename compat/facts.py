"""The facts cache: a tree's probe report is computed once and kept, keyed by everything it depends on.

A released tree in the cache is immutable, so its facts (every probe's answer, with file and line) never
change until the code that computes them does. The key of an entry is a digest of:

- the format of this cache, compat's version, and the Python that parsed the tree (`ast` differs);
- the code: every file under probes/ and, transitively, every compat module the probes import (found by
  reading their import lines, not by importing them), plus compat/report.py (`code_files()` lists them);
- the tree: a release's `release.json` (what was downloaded, when); for `--path` trees and installed
  engines, the relative path, size, mtime, ctime and inode of every `.py` file of the package, so an edit,
  a `compat patch` or a revert (which change at least the ctime) is probed afresh;
- what the tree holds in memory that differs from its files (doctor's in-memory patches).

A probe report is stored split by fact (compat/fact_parts.py: an index, then each fact on its own), so a reader
decodes only the facts it reads. Within a process every entry is read once and shared (checked by one stat of its
file per use: an entry rewritten or corrupted meanwhile is read again), and so are the values of a tree's key.

Entries live beside the release (`releases/<engine>/<version>/facts/<key>.json`); for other trees under
the cache dir (`<cache>/facts/<engine>/<tree digest>/`), never in the user's engine directory;
COMPAT_FACTS_DIR moves them all, COMPAT_FACTS_CACHE=off turns the cache off. Entries are written
atomically (temp file + rename: a reader sees a whole entry or none), a corrupt one is ignored and
rewritten. A tree whose newest file is younger than RACY_SECONDS is not stored: a second edit within the
file system's timestamp granularity could keep size and times (git's "racily clean" rule).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import time
import weakref
from pathlib import Path

from compat import __version__
from compat.core.hashing import sha256
from compat.core.tree import EngineTree
from compat import fact_parts
from compat.code_digest import PROBE_CODE, PROBE_FILES, code_digest, code_files  # noqa: F401  (this module's interface)
from compat.fact_parts import DECODES

TYPE_CHECKING = False  # typing itself costs milliseconds to import; annotations are strings here
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable

    from compat.fact_parts import Entry

__all__ = ["FORMAT", "RACY_SECONDS", "PROBE_CODE", "PROBE_FILES", "Slot", "slot", "memo", "code_memo", "forget", "code_digest",
           "code_files", "enabled", "pristine", "report_cached"]

FORMAT = 2  # 2: probe reports split by fact (compat/fact_parts.py)
RACY_SECONDS = 2.0
KEEP_PER_TREE = 48  # entries kept per tree (compat versions, worktrees, in-memory patches and the re-probed overlays of
# every target family the matrix tries them for: ~20 a release, ~100 kB each); oldest go first
KEEP_TREES = 64  # --path / installed trees remembered per engine
ORPHAN_SECONDS = 3600  # a temp file this old was left by a killed writer
_REPORT = "probe-report"


# tree -> what its key is made of, computed once per tree object (a release's record, the bytes it holds in memory)
_TREE_KEYS: weakref.WeakKeyDictionary[EngineTree, dict[str, Any]] = weakref.WeakKeyDictionary()


def enabled() -> bool:
    return os.environ.get("COMPAT_FACTS_CACHE", "").lower() not in ("0", "off", "no", "false")


# -- what identifies a tree ------------------------------------------------------------------------


def _scan(base: str) -> tuple[str, int]:
    """(digest of every .py file's relpath, size, mtime, ctime, inode; the newest of those times in ns)."""
    rows, newest = [], 0
    stack = [base]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__" and not entry.name.startswith("."):
                    stack.append(entry.path)
            elif entry.name.endswith(".py"):
                try:
                    st = entry.stat()
                except OSError:
                    continue
                rows.append(f"{entry.path[len(base):]}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}")
                newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    rows.sort()
    return sha256("\n".join(rows).encode()).hexdigest(), newest


def _in_memory(tree: EngineTree) -> str | None:
    """Digest of the files the tree holds in memory with other bytes than on disk ("" when none; None: unknowable)."""
    memory = tree.in_memory()
    if memory is None:  # a syntax tree without its bytes
        return None
    digest, changed = sha256(), False
    for relpath in sorted(memory):
        data = memory[relpath]
        try:
            with open(os.path.join(str(tree.root), relpath), "rb") as handle:  # another size: changed, nothing to read
                same = os.fstat(handle.fileno()).st_size == len(data) and handle.read() == data
        except OSError:
            same = False
        if not same:
            changed = True
            digest.update(f"{relpath}\0{len(data)}\0".encode() + sha256(data).digest())
    return digest.hexdigest() if changed else ""


def pristine(tree: EngineTree) -> bool:
    """True when the tree holds nothing in memory yet: its answers depend on its files alone."""
    return tree.pristine()


def _facts_home() -> Path | None:
    moved = os.environ.get("COMPAT_FACTS_DIR")
    return Path(moved).expanduser() if moved else None


class Slot:
    """Where one tree's entry of one kind lives, or why it cannot be cached (`path` None)."""

    def __init__(self, path: Path | None, key: str | None = None, *, reason: str | None = None,
                 tree_state: str | None = None, base: str | None = None, newest_ns: int = 0):
        self.path = path
        self.key = key
        self.reason = reason
        self.tree_state = tree_state  # the file scan the key was made from (None for releases)
        self.base = base
        self.newest_ns = newest_ns

    def __repr__(self) -> str:
        return f"Slot({self.path or self.reason})"

    def load(self) -> Any | None:
        """The cached value, or None (no entry, a corrupt one, or one written for another key)."""
        if self.path is None:
            return None
        try:
            data = self.path.read_bytes()
            DECODES[(str(self.path), "")] += 1
            entry = json.loads(data)
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != self.key or "value" not in entry:
            return None
        return entry["value"]

    def store(self, value: Any) -> Any:
        """Keep `value` (JSON-able) unless the tree is racy or changed meanwhile; returns it as a read would."""
        try:
            text = json.dumps({"format": FORMAT, "key": self.key, "compat": __version__, "value": value})
        except (TypeError, ValueError):  # not JSON: answer as computed, uncached
            return value
        stored = json.loads(text)["value"]
        self._write(text)
        return stored

    def _write(self, text: str) -> bool:
        """Write the entry's text atomically unless the tree is racy or changed meanwhile; True when written."""
        if self.path is None or not self._still_valid():
            return False
        from compat.sources.cache import atomic_write

        try:
            atomic_write(self.path, text)
            _prune(self.path.parent, KEEP_PER_TREE)
            if self.tree_state is not None:
                _prune(self.path.parent.parent, KEEP_TREES, folders=True)
        except OSError:  # a read-only or full cache: answer anyway, uncached
            return False
        return True

    # -- an entry split by part (a probe report: compat/fact_parts.py), read once per process ------------------
    def parts(self) -> Entry | None:
        """The entry split by part (its index and small parts read; the rest when asked), or None: no entry, a
        corrupt one, one of another key. Read once per process while its file stays the same."""
        return None if self.path is None else fact_parts.known_entry(str(self.path), self.key)

    def store_parts(self, parts: dict[str, Any], meta: dict[str, Any]) -> Entry | None:
        """Keep `parts` ({name: JSON}) and `meta` (JSON) as an entry split by part, unless the tree is racy or changed
        meanwhile; the entry as a reader sees it (kept in memory when it could not be stored); None: not JSON."""
        try:
            text, texts = fact_parts.encode(self.key or "", __version__, parts, meta)
        except (TypeError, ValueError):
            return None
        if self._write(text):
            entry = self.parts()
            if entry is not None:
                return entry
        return fact_parts.in_memory(self.key or "", __version__, json.loads(json.dumps(meta)), texts)

    def forget_parts(self) -> None:
        """The entry turned out corrupt while its parts were read: read it afresh next time."""
        if self.path is not None:
            fact_parts.forget(str(self.path))

    def _still_valid(self) -> bool:
        if self.tree_state is None or self.base is None:  # a release: immutable (both are set for other trees)
            return True
        if time.time_ns() - self.newest_ns < RACY_SECONDS * 1e9:
            return False
        return _scan(self.base)[0] == self.tree_state


def _prune(folder: Path, keep: int, *, folders: bool = False) -> None:
    """Keep the `keep` newest entries (or tree folders) of `folder`; drop temp files of killed writers."""
    import shutil

    entries, now = [], time.time()
    for entry in os.scandir(folder):
        if folders:
            if entry.is_dir():
                entries.append((entry.stat().st_mtime_ns, entry.path))
        elif entry.name.startswith("."):
            if now - entry.stat().st_mtime > ORPHAN_SECONDS:
                os.unlink(entry.path)
        elif entry.name.endswith(".json"):
            entries.append((entry.stat().st_mtime_ns, entry.path))
    for _, path in sorted(entries)[:-keep]:
        if folders:
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _tree_home(tree: EngineTree) -> tuple[Path, str, str | None, int]:
    """(folder of the tree's entries, identity of its files, scan state or None, newest ns)."""
    moved = _facts_home()
    if tree.source.kind == "released":
        record = (tree.root / "release.json").read_bytes()  # OSError: not a cached release, not cacheable
        identity = "release:" + sha256(record).hexdigest()
        home = moved / "released" / tree.engine / tree.root.name if moved else tree.root / "facts"
        return home, identity, None, 0
    from compat.sources.cache import cache_root

    base = os.path.join(str(tree.root), tree.engine) + os.sep
    state, newest = _scan(base)
    where = sha256(os.path.realpath(base).encode()).hexdigest()[:20]
    home = (moved / "trees" if moved else cache_root() / "facts") / tree.engine / where
    return home, f"files:{state}", state, newest


def _in_memory_once(tree: EngineTree) -> str | None:
    """`_in_memory`, computed once per released tree object while it holds the same files in memory (a release is
    immutable and a tree never changes a file it holds: it only reads more of them, which are the files' own bytes)."""
    if tree.source.kind != "released":
        return _in_memory(tree)
    memory = tree.in_memory()
    if memory is None:
        return None
    known = _TREE_KEYS.setdefault(tree, {})
    if known.get("held") != len(memory):
        known["memory"], known["held"] = _in_memory(tree), len(memory)
    return known["memory"]


def _tree_home_once(tree: EngineTree) -> tuple[Path, str, str | None, int]:
    """`_tree_home`, read once per released tree object (other trees are scanned each time: they may be edited)."""
    if tree.source.kind != "released":
        return _tree_home(tree)
    known = _TREE_KEYS.setdefault(tree, {})
    if "home" not in known or known.get("moved") != os.environ.get("COMPAT_FACTS_DIR"):
        known["home"], known["moved"] = _tree_home(tree), os.environ.get("COMPAT_FACTS_DIR")
    return known["home"]


def slot(tree: EngineTree, kind: str = _REPORT, inputs: Any = None, code: tuple[str, ...] = PROBE_CODE) -> Slot:
    """The entry of `kind` (with `inputs`) for `tree`, computed by `code`."""
    if not enabled():
        return Slot(None, reason="COMPAT_FACTS_CACHE is off")
    memory = _in_memory_once(tree)
    if memory is None:
        return Slot(None, reason="the tree holds syntax trees without their bytes")
    try:
        home, identity, state, newest = _tree_home_once(tree)
    except OSError as err:
        return Slot(None, reason=f"cannot identify the tree ({err})")
    material = [FORMAT, __version__, sys.implementation.name, list(sys.version_info[:2]), code_digest(tuple(code)),
                tree.engine, identity, memory, kind, inputs]
    key = sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()[:32]
    return Slot(home / f"{kind}-{key}.json", key, tree_state=state, base=os.path.join(str(tree.root), tree.engine) + os.sep,
                newest_ns=newest)


def report_cached(tree: EngineTree) -> bool:
    """True when the facts cache holds the tree's probe report, well formed (as compat/report.py takes it); its index is
    read once per process, so `build_report` then reads the same entry without reading its file again."""
    place = slot(tree)
    entry = place.parts()
    return entry is not None and isinstance(entry.meta.get("probe_errors"), list)


def memo(tree: EngineTree, kind: str, inputs: Any, compute: Callable[[], Any], *, code: Iterable[str] = PROBE_CODE) -> Any:
    """compute() once per tree content, `kind`, `inputs` (JSON-able) and digest of `code`; JSON in, JSON out.

    For work derived from a tree that is worth keeping across runs (doctor's in-memory patches, a class's loader);
    read once per process while its file stays the same. A value of None is not kept (it is computed again next time).
    """
    place = slot(tree, kind, inputs, tuple(code))
    where = None if place.path is None else str(place.path)
    value = fact_parts.known_value(where, place.key)
    if value is None:
        value = place.load()
        if value is None:
            value = place.store(compute())
        fact_parts.keep_value(where, place.key, value)
    return value


def code_memo(kind: str, inputs: Any, compute: Callable[[], Any], *, code: Iterable[str]) -> Any:
    """compute() once per `kind`, `inputs` (JSON-able) and digest of `code`, for what depends on compat's code alone
    (the patches' catalog: compat/patches); JSON in, JSON out, kept under the cache's facts/code/."""
    if not enabled():
        return compute()
    from compat.sources.cache import cache_root

    moved = _facts_home()
    home = moved / "code" if moved else cache_root() / "facts" / "code"
    material = [FORMAT, __version__, sys.implementation.name, list(sys.version_info[:2]), code_digest(tuple(code)), kind,
                inputs]
    key = sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()[:32]
    place = Slot(home / f"{kind}-{key}.json", key)
    where = str(place.path)
    value = fact_parts.known_value(where, key)
    if value is None:
        value = place.load()
        if value is None:
            value = place.store(compute())
        fact_parts.keep_value(where, key, value)
    return value


def forget(tree: EngineTree) -> int:
    """Remove every entry kept for this tree (`compat patch` may call it; its new stats miss them anyway)."""
    try:
        home = _tree_home(tree)[0]
    except OSError:
        return 0
    removed = 0
    for entry in home.glob("*.json") if home.is_dir() else ():
        try:
            entry.unlink()
            removed += 1
        except OSError:
            pass
    return removed
