"""`compat cache dir|list|clean`: where fetched releases and probe facts are kept, how big, and cleaning them.

The cache, its layout, a release's lock and its removal are compat/sources/cache.py's; this command lists
and renders. `clean` takes a release's lock before deleting it and skips a release another compat run
holds (it is being fetched); the folder is renamed first and then removed, so no run is handed half a
release. Anything else in the folder (a venv the tests build, logs) is listed but never removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from compat.commands._source import absolute_path
from compat.core.output import EXAMPLES_HERE, exit_codes, human_size, plural, print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from rich.console import Console

    from compat.sources.cache import ReleaseFolder

NAME = "cache"
ORDER = 60
SUMMARY = "where fetched releases are cached, how big they are, and cleaning them"
DESCRIPTION = (
    "Releases fetched by --engine vllm==X (their Python source only, about 10-60 MB each) and the facts the "
    "probes found in them are kept in the user cache, so a release is downloaded once and probed once. "
    "compat matrix keeps its cells there, and fleet mode the bundles it uploads. "
    "dir prints where that is, list what is there with sizes on disk, clean removes releases or facts (--all: all of it) "
    "(never one another compat run is fetching)."
)
EPILOG = EXAMPLES_HERE + """
  compat cache dir                       the folder (du -sh "$(compat cache dir)")
  compat cache list                      every cached release and the facts cache, with sizes
  compat cache list --json               the same for scripts (sizes in bytes)
  compat cache clean --all --dry-run     what --all would remove, and how much it frees
  compat cache clean vllm==0.11.0        one release (and its facts)
  compat cache clean vllm                every cached vLLM release; 'sglang<0.5' a range
  compat cache clean --facts             only the probe facts (recomputed on the next run)
  compat cache clean --all               every release, listing and fact compat cached, the matrix cells and
                                         the fleet bundles: everything `list` counts as compat's

The cache honours --cache-dir and XDG_CACHE_HOME; the facts of --path trees and installed engines honour
COMPAT_FACTS_DIR. Nothing outside compat's own entries is removed. A release whose files no longer match its
manifest is listed as damaged: the next fetch replaces it, or clean it (compat cache clean vllm==X).

""" + exit_codes(c4="clean skipped a release another compat run holds (it is being fetched); the rest was removed")

ACTIONS = ("dir", "list", "clean")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=ACTIONS, help="dir: where the cache is; list: what it holds; clean: remove")
    parser.add_argument("spec", nargs="*", metavar="SPEC",
                        help="clean: vllm, sglang, vllm==0.11.0 or a range like 'sglang<0.5' (cached releases only)")
    parser.add_argument("--cache-dir", metavar="DIR", type=absolute_path,
                        help="the cache folder (default: $XDG_CACHE_HOME/compat or ~/.cache/compat)")
    parser.add_argument("--all", action="store_true", help="clean: every release, index listing and fact")
    parser.add_argument("--facts", action="store_true", help="clean: the probe facts only (of SPEC's releases, or all)")
    parser.add_argument("--dry-run", action="store_true", help="clean: say what would be removed; remove nothing")
    parser.add_argument("--json", action="store_true", help="print the result as JSON (sizes in bytes)")


def run(args: argparse.Namespace, console: Console) -> int:
    from compat.core.errors import UsageError
    from compat.sources.cache import cache_root

    cache = cache_root(args.cache_dir)
    if cache.exists() and not cache.is_dir():
        from compat.core.errors import RefusedError

        raise RefusedError(f"the cache {cache} is a file, not a folder", hint="--cache-dir names a folder (made if absent)")
    if args.action != "clean" and (args.spec or args.all or args.facts or args.dry_run):
        raise UsageError(f"SPEC, --all, --facts and --dry-run are for clean, not {args.action}")
    if args.action == "dir":
        return _dir(cache, args, console)
    if args.action == "list":
        return _list(cache, args, console)
    return _clean(cache, args, console)


# -- what is there (the layout is compat/sources/cache.py's) -------------------------------------------------
def _release_rows(cache: Path) -> list[tuple[ReleaseFolder, dict[str, Any]]]:
    """Every release folder (complete or left by a killed fetch) and build folder, with its row: sizes, lock state."""
    from compat.sources.cache import release_folders, tree_size

    rows = []
    for folder in release_folders(cache):
        record = folder.record() or {}
        rows.append((folder, {
            "engine": folder.entry.engine, "version": folder.entry.version, "path": str(folder.path),
            "bytes": tree_size(folder.path), "facts_bytes": tree_size(folder.facts) if folder.facts.is_dir() else 0,
            "state": folder.state, "in_use": folder.entry.lock_held(), "fetched_at": record.get("fetched_at"),
        }))
    return rows


def cached_releases(cache: Path) -> list[dict[str, Any]]:
    return [row for _, row in _release_rows(cache)]


def inventory(cache: Path) -> dict[str, Any]:
    """The whole cache as `compat cache list --json` reports it."""
    from compat.sources.cache import OWN_ENTRIES, facts_dirs, listing_files, tree_size

    releases = cached_releases(cache)
    index = listing_files(cache)
    facts: list[dict[str, Any]] = [{"path": str(d), "bytes": tree_size(d)} for d in facts_dirs(cache) if d.is_dir()]
    other: list[dict[str, Any]] = [{"path": str(p), "bytes": tree_size(p)} for p in sorted(cache.iterdir())
                                   if p.name not in OWN_ENTRIES] if cache.is_dir() else []
    kept = _kept(cache)
    ours = (sum(r["bytes"] for r in releases) + sum(tree_size(p) for p in index) + sum(f["bytes"] for f in facts)
            + sum(k["bytes"] for k in kept))
    return {
        "cache": str(cache), "exists": cache.is_dir(), "releases": releases,
        "index": [{"path": str(p), "engine": p.stem, "bytes": tree_size(p)} for p in index],
        "facts": facts, "facts_bytes": sum(f["bytes"] for f in facts) + sum(r["facts_bytes"] for r in releases),
        "kept": kept,
        "other": other, "bytes": ours, "total_bytes": ours + sum(o["bytes"] for o in other),
    }


KEPT = {  # what else compat writes in its cache, besides releases, listings and facts: folder -> what it is
    "matrix": "compat matrix's cells and built-in targets; recomputed when removed",
    "fleet": "the compat bundles fleet mode uploads to hosts; rebuilt when removed",
}


def _kept(cache: Path) -> list[dict[str, Any]]:
    from compat.sources.cache import tree_size

    return [{"name": name, "path": str(cache / name), "bytes": tree_size(cache / name), "what": what}
            for name, what in KEPT.items() if (cache / name).exists()]


def _dir(cache: Path, args: argparse.Namespace, console: Console) -> int:
    from compat.sources.cache import facts_dirs

    where = "--cache-dir" if args.cache_dir else ("$XDG_CACHE_HOME/compat" if os.environ.get("XDG_CACHE_HOME") else "~/.cache/compat")
    if args.json:
        print_json({"cache": str(cache), "from": where, "exists": cache.is_dir(),
                    "facts": [str(d) for d in facts_dirs(cache)]}, "cache-dir")
    else:
        console.out(str(cache), highlight=False)
    return 0


def _list(cache: Path, args: argparse.Namespace, console: Console) -> int:
    data = inventory(cache)
    if args.json:
        print_json(data, "cache-list")
        return 0
    say = lambda text: console.out(text, highlight=False)  # noqa: E731 - plain lines, never wrapped or marked up
    say(f"compat cache: {cache}" + ("" if data["exists"] else " (empty: nothing fetched yet)"))
    by_engine: dict[str, list[dict]] = {}
    for row in data["releases"]:
        by_engine.setdefault(row["engine"], []).append(row)
    for engine, rows in by_engine.items():
        say(f"{engine}: {plural(len(rows), 'release')}, {human_size(sum(r['bytes'] for r in rows))}")
        for r in rows:
            flags = [f"facts {human_size(r['facts_bytes'])}"] if r["facts_bytes"] else []
            flags += [r["state"]] if r["state"] != "complete" else []
            flags += ["being fetched by another compat run"] if r["in_use"] else []
            say(f"  {r['version']:<14} {human_size(r['bytes']):>10}" + (f"  ({', '.join(flags)})" if flags else ""))
    for item in data["index"]:
        say(f"index listing {item['engine']}: {human_size(item['bytes'])}  ({item['path']})")
    say(f"facts: {human_size(data['facts_bytes'])} (probe answers; recomputed when removed)"
        + "".join(f"\n  {f['path']}  {human_size(f['bytes'])}" for f in data["facts"]))
    for item in data["kept"]:
        say(f"{item['name']}: {human_size(item['bytes'])} ({item['what']})")
    if data["other"]:
        say("not compat's cache (never removed by compat cache clean): "
            + ", ".join(f"{Path(o['path']).name} {human_size(o['bytes'])}" for o in data["other"]))
    say(f"total: {human_size(data['bytes'])} of compat's cache (compat cache clean --all removes it)")
    return 0


# -- cleaning -----------------------------------------------------------------------------------------------
def _clean(cache: Path, args: argparse.Namespace, console: Console) -> int:
    from compat.core.errors import EXIT_OK, EXIT_REFUSED, UsageError
    from compat.sources.cache import facts_dirs, listing_files, tree_size

    if not (args.spec or args.all or args.facts):
        raise UsageError("compat cache clean: say what to remove", hint="a SPEC (vllm==0.11.0, vllm, 'sglang<0.5'), --facts or --all")
    if args.all and args.spec:
        raise UsageError("give SPEC or --all, not both")
    every = args.all or not args.spec  # --all, or --facts of every release
    releases = [(f, r) for f, r in _release_rows(cache) if every or any(_matches(r, spec) for spec in args.spec)]
    if args.spec and not args.facts:
        releases = [(f, r) for f, r in releases if f.state != "building"]  # a build folder goes with --all only
    removed: list[dict] = []
    skipped: list[dict] = []
    for folder, row in releases:
        if args.facts and not args.all:
            target = Path(row["path"]) / "facts"
            if target.is_dir():
                removed.append(_remove(target, row["facts_bytes"], f"{row['engine']} {row['version']} facts", args.dry_run))
            continue
        if row["in_use"] or not _remove_release(folder, row, args.dry_run, removed):
            skipped.append({**row, "why": "another compat run holds its lock (it is being fetched); run clean again later"})
    if args.all or (args.facts and not args.spec):
        for facts in facts_dirs(cache):
            if facts.is_dir():
                removed.append(_remove(facts, tree_size(facts), f"facts {facts}", args.dry_run))
    if args.all:
        for listing in listing_files(cache):
            removed.append(_remove(listing, tree_size(listing), f"index listing {listing.stem}", args.dry_run))
        for item in _kept(cache):  # everything `list` shows as compat's is what --all removes
            removed.append(_remove(Path(item["path"]), item["bytes"], f"{item['name']} folder", args.dry_run))
    freed = sum(item["bytes"] for item in removed)
    if args.json:
        print_json({"cache": str(cache), "dry_run": args.dry_run, "removed": removed, "skipped": skipped,
                    "freed_bytes": freed}, "cache-clean")
    else:
        say = lambda text: console.out(text, highlight=False)  # noqa: E731
        verb = "would remove" if args.dry_run else "removed"
        for item in removed:
            say(f"{verb} {item['what']} ({human_size(item['bytes'])})")
        for row in skipped:
            say(f"skipped {row['engine']} {row['version']}: {row['why']}")
        if not removed and not skipped:
            wanted = " ".join(args.spec) or ("the facts" if args.facts else "anything")
            say(f"nothing to remove: {wanted} is not in the cache {cache}")
        else:
            say(f"{'would free' if args.dry_run else 'freed'} {human_size(freed)} in {cache}")
    return EXIT_REFUSED if skipped else EXIT_OK


def _matches(row: dict[str, Any], text: str) -> bool:
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    from compat.sources import parse_engine_spec

    spec = parse_engine_spec(text)
    if row["engine"] != spec.engine:
        return False
    if spec.specifier is None:
        return True
    if spec.specifier == "latest":
        from compat.core.errors import UsageError

        raise UsageError("compat cache clean: name versions (vllm==0.11.0, 'vllm<0.12'), not latest")
    try:
        return SpecifierSet(spec.specifier).contains(Version(row["version"]), prereleases=True)
    except InvalidVersion:
        return False


def _remove(path: Path, size: int, what: str, dry_run: bool) -> dict[str, Any]:
    if not dry_run:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    return {"what": what, "path": str(path), "bytes": size}


def _remove_release(folder: ReleaseFolder, row: dict[str, Any], dry_run: bool, removed: list[dict[str, Any]]) -> bool:
    """Remove one release folder under its lock; False when another run took the lock first."""
    what = f"{row['engine']} {row['version']}" + (f" ({row['state']})" if row["state"] != "complete" else "")
    if not dry_run and not folder.entry.remove(folder.path):
        return False
    removed.append({"what": what, "path": row["path"], "bytes": row["bytes"]})
    return True
