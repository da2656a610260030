"""sources -> probes -> report: run every probe of an engine on a tree, then show the result.

`build_report` gives the JSON of `compat probe --json` (keys are the probes' keys, see
probes/); `render` prints the same facts for people, a section per probe, each fact with
the file and line it came from.

The probes' answers are kept in the facts cache (compat/facts.py): a tree is probed once per content
and probe code, and every caller of `build_report` (probe, doctor, verify) reads them from there.
What compat patch recorded (`compat_patches`) and where the tree came from (`source`) are read afresh
each time. Nothing here imports rich, the probes or the patch registry until it needs them.
"""

from __future__ import annotations

import functools
import os
import time

from compat import facts
from compat.core.lazy_json import Deferred, LazyDict
from compat.core.tree import EngineTree, UnparseableFile

TYPE_CHECKING = False  # typing and rich cost milliseconds to import; annotations are strings here
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeGuard

    from compat.core.progress import Progress
    from compat.fact_parts import Entry

    from rich.console import Console, Group
    from rich.table import Table


def build_report(tree: EngineTree) -> dict[str, Any]:
    """The probe report of `tree`: a dict whose facts are decoded from the facts cache when first read (each fact of
    a cached entry once per process, whoever reads it: doctor reads a few of them, never explain's raise sites)."""
    started = time.perf_counter()
    report = LazyDict(engine=tree.engine, version=tree.version, source=tree.source.to_json())
    found = _Facts(tree)
    if isinstance(found.entry, dict):  # answers that are not JSON: as computed, uncached
        report.update(found.entry["facts"])
    else:
        for name in found.entry.names:
            dict.__setitem__(report, name, Deferred(functools.partial(found.value, name), functools.partial(found.text, name)))
    report["compat_patches"] = _applied_patches(tree)
    report["compat_plugin"] = _plugin_state(tree)
    if report.get("version") is None and isinstance(report.get("version_in_source"), dict):
        report["version"] = report["version_in_source"].get("version")
    report["probe_errors"] = list(found.probe_errors)
    report["probe_seconds"] = round(time.perf_counter() - started, 3)
    return report


class _Facts:
    """A tree's probe answers, from its facts cache entry (probed and stored when it has none); an entry found corrupt
    while its facts are read is ignored: the tree is probed again and the entry rewritten."""

    def __init__(self, tree: EngineTree) -> None:
        self.tree, self.place = tree, facts.slot(tree)
        entry = self.place.parts()
        self.entry: Entry | dict[str, Any] = entry if _well_formed(entry) else self._probe()

    def _probe(self) -> Entry | dict[str, Any]:
        found = _probe(self.tree)
        stored = self.place.store_parts(found["facts"], {"probe_errors": found["probe_errors"]})
        return stored if stored is not None else found

    @property
    def probe_errors(self) -> list[str]:
        return self.entry["probe_errors"] if isinstance(self.entry, dict) else self.entry.meta["probe_errors"]

    def value(self, name: str) -> Any:
        return self._read(lambda entry: entry.value(name), name)

    def text(self, name: str) -> str:
        return self._read(lambda entry: entry.text(name).decode("ascii"), name)

    def _read(self, how: Callable[[Entry], Any], name: str) -> Any:
        from compat.fact_parts import Corrupt

        for attempt in (1, 2):
            entry = self.entry
            if isinstance(entry, dict):  # only built from plain values, never deferred
                raise KeyError(name)
            try:
                return how(entry)
            except Corrupt:
                if attempt == 2:
                    raise
                self.place.forget_parts()
                self.entry = self._probe()
        raise AssertionError("unreachable")


def cached_fact(tree: EngineTree, name: str) -> Any | None:
    """One fact of the tree's probe report when the facts cache holds it (decoded alone), else None (not probed)."""
    from compat.fact_parts import Corrupt

    entry = facts.slot(tree).parts()
    if not _well_formed(entry) or name not in entry.index:
        return None
    try:
        return entry.value(name)
    except Corrupt:
        return None


def _plugin_state(tree: EngineTree):
    """compat plugin mode: what it patches in memory in this engine's environment (None when absent)."""
    from compat.plugin import state

    return state(tree)


def build_reports(trees: list[EngineTree], *, workers: int | None = None) -> list[dict[str, Any]]:
    """`build_report` of each tree, the ones missing from the facts cache probed in parallel first."""
    probe_missing(trees, workers=workers)
    return [build_report(tree) for tree in trees]


def probe_missing(trees: list[EngineTree], *, workers: int | None = None, progress: Progress | None = None,
                  what: str = "probing releases") -> int:
    """Probe, in parallel processes, the trees whose facts are not cached yet; the number probed.

    For doctor over a range of releases: call it once with every release's tree before diagnosing them
    one by one (each `build_report` then reads the cache). Trees holding in-memory changes are left to
    `build_report` (a worker process sees only the files); with one worker or one tree, nothing is started.
    `progress` (compat.core.progress) is told of each release as its probes finish (a bar, or lines in a log).
    """
    missing = []
    for tree in trees:
        place = facts.slot(tree)
        if facts.pristine(tree) and place.path is not None and not _well_formed(place.parts()):
            missing.append(tree)
    workers = min(workers or os.cpu_count() or 1, len(missing))
    if workers <= 1:
        return 0
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    jobs = [(t.engine, str(t.root), t.version, t.source.kind, t.source.location, t.source.detail) for t in missing]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        finished = pool.map(_probe_in_worker, jobs)  # in the order of `jobs`
        from compat.core.progress import each

        for _ in (each(progress, [t.version or str(t.root) for t in missing], what) if progress else missing):
            next(finished)
    return len(missing)


def _probe_in_worker(job: tuple) -> None:
    from compat.core.tree import SourceInfo

    engine, root, version, kind, location, detail = job
    tree = EngineTree(engine, root, version, SourceInfo(kind, location, detail))
    found = _probe(tree)
    facts.slot(tree).store_parts(found["facts"], {"probe_errors": found["probe_errors"]})


def _probe(tree: EngineTree) -> dict[str, Any]:
    """Every probe's answer on this tree: {"facts": {key: value, ...}, "probe_errors": [keys of probes that crashed]}."""
    from compat.probes import all_probes

    values: dict[str, Any] = {}
    errors = []
    for probe in all_probes(tree.engine):
        try:
            value = probe(tree)
        except UnparseableFile as err:
            # A file this Python cannot parse is a property of this release, not a crash.
            value = {"present": False, "error": str(err)}
        except Exception as err:  # noqa: BLE001 - one broken probe must not hide the others
            value = {"present": False, "error": f"probe {probe.key} failed: {type(err).__name__}: {err}"}
            errors.append(probe.key)
        values[probe.key] = value
    return {"facts": values, "probe_errors": errors}


def _well_formed(entry: Entry | None) -> TypeGuard[Entry]:
    return entry is not None and isinstance(entry.meta.get("probe_errors"), list)


def _applied_patches(tree: EngineTree) -> list[dict]:
    """What `compat patch` changed in this tree (its record), so a probe never misleads about a patched engine."""
    from compat.patch_record import has_traces

    if not has_traces(tree):
        return []  # no record, journal or temp file: nothing to read, and no need for the patch machinery
    from compat.patching import applied_patches_settled

    return applied_patches_settled(tree)


# -- rendering -----------------------------------------------------------------------------
_SKIP = {"engine", "version", "source", "probe_errors", "probe_seconds"}


def render(report: dict[str, Any], console: Console) -> None:
    from rich.markup import escape
    from rich.panel import Panel
    from rich.text import Text

    from compat.probes import all_probes

    src = report["source"]
    head = Text.assemble(
        (f"{report['engine']} {report.get('version') or '(version unknown)'}", "bold"),
        f"  {src['kind']}: {src['location']}",
    )
    console.print(Panel(head, title="compat probe", expand=False))
    titles = {p.key: p.title for p in all_probes(report["engine"])}
    titles["compat_patches"] = "Patches applied by compat patch (from its record)"
    for key, value in report.items():
        if key in _SKIP:
            continue
        console.print()
        if console.is_terminal:
            console.rule(f"[bold]{escape(titles.get(key, key))}[/]  [dim]({key})[/]", align="left")
        else:  # into a pipe nothing has a width to fill: the heading alone
            console.print(f"[bold]== {escape(titles.get(key, key))}[/]  [dim]({key})[/]")
        console.print(_render_value(value))
    console.print(f"\n[dim]probed in {report['probe_seconds']:.2f} s, statically (the engine was not imported)[/]")


def _render_value(value: Any):
    from rich.text import Text

    if isinstance(value, dict):
        return _render_dict(value)
    if isinstance(value, list):
        return _render_list(value)
    return Text(str(value))


def _render_dict(d: dict) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    if d.get("present") and isinstance(d.get("summary"), str):  # a fact too long to print whole (error_sites)
        return Text(d["summary"])
    if d.get("present") is False and ("reason" in d or "error" in d):
        return Text("absent in this release: " + str(d.get("reason") or d.get("error")), style="yellow")
    if len(d) > 12 and all(isinstance(v, str) for v in d.values()):  # a long name -> location map
        from rich.markup import escape

        return Text(f"{len(d)}: " + ", ".join(escape(k) for k in d) + "  (locations in --json)")
    table = Table.grid(padding=(0, 2))
    table.add_column(style="cyan", no_wrap=True)
    table.add_column()
    nested: list[tuple[str, Any]] = []
    for k, v in d.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            nested.append((k, v))
        elif isinstance(v, dict) and v and any(isinstance(x, (dict, list)) for x in v.values()):
            nested.append((k, v))
        else:
            table.add_row(k, _short(v))
    parts: list[Any] = [table]
    for k, v in nested:
        parts.append(Text(f"{k}:", style="cyan"))
        parts.append(_render_value(v))
    return Group(*parts)


def _render_list(items: list) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    if not items:
        return Text("(none)", style="dim")
    if not all(isinstance(x, dict) for x in items):
        return Text(", ".join(str(x) for x in items))
    columns: list[str] = []
    for item in items:
        columns.extend(k for k in item if k not in columns)
    # People read the name and where it is; secondary locations stay in --json.
    columns = [c for c in columns if c == "location" or not c.endswith("_location")]
    shared = {c: items[0].get(c) for c in columns if len(items) > 1 and c != "location"
              and all(_short(x.get(c)) == _short(items[0].get(c)) for x in items)}
    columns = [c for c in columns if c not in shared]
    if "location" in columns:  # last, so names line up on the left
        columns.remove("location")
        columns.append("location")
    table: Table | Group
    if len(columns) <= 4:
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        for col in columns:
            table.add_column(col, overflow="fold", style="dim" if col == "location" else None)
        for item in items:
            table.add_row(*(_short(item.get(c)) for c in columns))
    else:  # too wide for columns: one line per item, the name first and its location last
        lines = []
        for item in items:
            line = Text(_short(item.get(columns[0])), style="bold")
            for c in columns[1:-1] if columns[-1] == "location" else columns[1:]:
                if item.get(c) not in (None, [], ""):
                    line.append(f"  {c}: ", style="cyan").append(_short(item.get(c)))
            if columns[-1] == "location":
                line.append(f"  {_short(item.get('location'))}", style="dim")
            lines.append(line)
        table = Group(*lines)
    if not shared:
        return table
    note = Text("same for all: " + "; ".join(f"{k}={_short(v)}" for k, v in shared.items()), style="dim")
    return Group(note, table)


def _short(v: Any) -> str:
    from rich.markup import escape

    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (list, tuple)):
        return ", ".join(_short(x) for x in v) if v else "(none)"
    if isinstance(v, dict):
        return ", ".join(f"{k}={_short(x)}" for k, x in v.items())
    return escape(str(v))
