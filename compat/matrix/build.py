"""The matrix's data: one row per (engine, release, column), each doctor's row for that pair on that release.

    releases (doctor's release_trees) x columns (templates.py, the user's pair) -> doctor's release_row -> cell

Each cell is what `doctor --releases --json` says for the pair on that release (verdict, fixes, failing checks)
plus the checks themselves, slimmed to what the page shows, each with a link to its evidence upstream
(evidence.py). The template columns of a release are one facts-cache entry, keyed as the facts cache keys anything
(the release, doctor's code) and by the templates and the release list, so a warm rebuild reads one entry per
release. The entries live in a folder of their own (<cache>/matrix/cells/<engine>/<version>/), not beside the
release's probe reports: a release's facts folder keeps only its newest few entries, and doctor runs of the same
release would push the matrix's out. The user's pair is diagnosed afresh each time (its files are the user's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compat import engines as engine_units
from compat.core.progress import Progress, each
from compat.fix import typed
from compat.matrix.evidence import evidence_url, issue_links
from compat.matrix.templates import DRAFTER_KINDS, FAMILIES, Column, templates_digest

USER = "your pair"
# what a cell's value depends on besides the release and the templates: doctor, its checks, patches, probes
CELL_CODE = ("compat.probes", "compat.doctor", "compat.matrix.build", "compat.matrix.evidence", "compat.engines",
             "compat.fix", "compat.release_ref")


def default_releases() -> dict[str, str]:
    """The range a page covers unless --releases says otherwise, per engine: each unit's DEFAULT_RELEASES (the
    releases with EAGLE-3, as tools/failure_modes.py)."""
    return {e.name: e.default_releases for e in engine_units.all_engines()}


def slim(engine: str, version: str, row: dict[str, Any]) -> dict[str, Any]:
    """doctor's release row without the whole diagnosis: the checks as the page shows them, with their evidence."""
    cell = {key: row.get(key) for key in ("verdict", "fixes", "failing", "launch", "error", "answers") if row.get(key) is not None}
    diagnosis = row.get("diagnosis") or {}
    if (diagnosis.get("method") or {}).get("family"):
        cell["method"] = diagnosis["method"]["family"]  # the method doctor checked (the drafter's, or the column's)
    checks = []
    for check in diagnosis.get("checks") or []:
        fix = typed(check.get("fix"))  # the check's fix (the dataclass): the page shows its command, else its words
        item = {"check": check["check"], "title": check["title"], "verdict": check["verdict"], "detail": check["detail"],
                "location": check.get("location"), "evidence": evidence_url(engine, version, check.get("location")),
                "fix": fix.shown() if fix is not None else None}
        links = issue_links(check)
        if links:
            item["issues"] = links
        checks.append(item)
    if checks:
        cell["checks"] = checks
        cell["fix_steps"] = [step["command"] for step in diagnosis.get("fix_steps") or []]
    return cell


def template_cells(engine: str, version: str, tree: Any, columns: list[Column], options: Any, finder: Any,
                   versions: list[str], cache_dir: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """column id -> cell for the template columns on one release: one facts-cache entry per release and column set
    (the cache keeps a few entries per release, so not one per cell), keyed by the templates, doctor's options and
    the release list the fixes search."""
    from compat import facts
    from dataclasses import replace

    from compat.doctor import no_drafter, read_drafter, read_target, release_row

    inputs = {"templates": templates_digest(), "columns": [c.id for c in columns], "options": _options_key(options),
              "releases": versions}
    # the slot first, while the tree is untouched: once doctor has read it, telling what it holds takes a file
    # comparison per file read (facts._in_memory)
    keyed = facts.slot(tree, "matrix-cells", inputs, CELL_CODE)
    place = keyed if keyed.path is None else facts.Slot(cells_home(cache_dir) / engine / version / keyed.path.name, keyed.key)
    found = place.load()
    if isinstance(found, dict):
        return found
    cells = {}
    for column in columns:
        unnamed = method_unnamed(engine, column.method)
        if unnamed is not None:
            cells[column.id] = unnamed
            continue
        target = read_target(column.target)
        drafter = no_drafter(target) if column.drafterless else read_drafter(column.drafter, target)
        # a drafterless column says its method; a drafter's own keys say its family
        mine = replace(options, method=column.method) if column.drafterless else options
        cells[column.id] = {"method": column.method, **slim(engine, version, release_row(version, tree, target, drafter,
                                                                                         mine, finder))}
    return place.store(cells)


def method_unnamed(engine: str, method: str) -> dict[str, Any] | None:
    """A cell for a method compat knows no name of on this engine (compat.methods' names per engine): doctor would
    check a name the engine may not use, so the cell cannot tell, and says why. EAGLE-3 is the `method` check's own."""
    from compat.doctor.diagnose import UNCHECKED
    from compat.methods import get_method

    family = get_method(method)
    if method == "eagle3" or family.engine_names(engine):
        return None
    unit = engine_units.get(engine)
    detail = (f"cannot tell: compat knows no name {unit.display_name} gives {family.title} yet (methods/{method}.py), so "
              "it cannot tell whether this release runs it; compat probe --engine ENGINE==X lists the release's methods")
    return {"method": method, "verdict": UNCHECKED, "fixes": [], "failing": [],
            "checks": [{"check": "method-name", "title": "method: the release has the method launched, under that name",
                        "verdict": "warn", "detail": detail, "location": None, "evidence": None, "fix": None}]}


def cells_home(cache_dir: str | Path | None = None) -> Path:
    """Where the matrix keeps its cells: under COMPAT_FACTS_DIR when the facts are moved, else under the cache."""
    import os

    from compat.sources.cache import cache_root

    moved = os.environ.get("COMPAT_FACTS_DIR")
    return (Path(moved).expanduser() if moved else cache_root(cache_dir)) / "matrix" / "cells"


def _options_key(options: Any) -> list[Any]:
    return [options.num_speculative_tokens, options.topk, sorted((options.extra_spec or {}).items())]


def build(engines: list[str], columns: list[Column], *, releases: str | None = None, user: dict[str, Any] | None = None,
          options: Any = None, cache_dir: str | Path | None = None, offline: bool = False,
          progress: Progress | None = None) -> dict[str, Any]:
    """The matrix document (matrix.json): engines, their releases, the columns, and one row per cell.

    `user`: {"target": Target, "drafter": Drafter} (read as doctor reads them), shown as the column USER.
    `progress` (compat.core.progress) is told of each long iteration (a bar on a terminal); None iterates silently."""
    from compat.doctor import Options, release_row, release_trees
    from compat.core.errors import SourceError
    from compat.sources.released import list_releases

    options = options or Options()
    document: dict[str, Any] = {"engines": {}, "columns": [], "rows": []}
    if user is not None:
        document["columns"].append({"id": USER, "family": USER, "drafter_kind": USER, "label": USER,
                                    "target": str(user["target"].path), "drafter": str(user["drafter"].path)})
    document["columns"] += [{"id": c.id, "family": c.family, "drafter_kind": c.drafter_kind, "label": c.label,
                             "method": c.method, "target": str(c.target),
                             "drafter": "(none: the method takes none)" if c.drafterless else str(c.drafter)} for c in columns]
    for engine in engines:
        spec = releases or engine_units.get(engine).default_releases
        versions = list_releases(engine, cache_dir=cache_dir, offline=offline)
        trees, finder = release_trees(engine, spec, versions=versions, cache_dir=cache_dir, offline=offline,
                                      progress=progress)
        document["engines"][engine] = {"releases": spec, "versions": list(trees)}
        for version in (each(progress, list(trees), f"{engine} cells") if progress else trees):
            tree = trees[version]
            if isinstance(tree, SourceError):  # no tree: every column says so, as doctor --releases does
                cells = {c.id: slim(engine, version, release_row(version, tree, None, None, options, finder))  # type: ignore[arg-type]
                         for c in columns}
            else:
                cells = template_cells(engine, version, tree, columns, options, finder, versions,
                                       cache_dir) if columns else {}
            if user is not None:
                cells = {USER: slim(engine, version, release_row(version, tree, user["target"], user["drafter"], options,
                                                                 finder)), **cells}
            for column_id, cell in cells.items():
                document["rows"].append({"engine": engine, "version": version, "column": column_id, **cell})
    return document


def summary(document: dict[str, Any]) -> dict[str, Any]:
    """What the page's header says: engines, release counts, families, drafter kinds."""
    columns = document["columns"]
    from compat.matrix.method_templates import METHOD_KINDS

    kinds = [USER, *DRAFTER_KINDS, *(mk.kind for mk in METHOD_KINDS)]
    return {"engines": {e: len(v["versions"]) for e, v in document["engines"].items()},
            "families": sorted({c["family"] for c in columns}, key=_family_order),
            "drafter_kinds": [k for k in kinds if any(c["drafter_kind"] == k for c in columns)],
            "methods": list(dict.fromkeys(c.get("method") or "eagle3" for c in columns if c["id"] != USER))}


def _family_order(name: str) -> int:
    ids = [USER] + [f.id for f in FAMILIES]
    return ids.index(name) if name in ids else len(ids)
