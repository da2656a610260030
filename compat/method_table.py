"""Which methods a release has, family by family: the probe's `methods` fact read through compat.methods.

The probe reads what the release's code says (each name and where it is declared, what runs it, the drafter
classes that declare it, the layer-id reader, the block keys, a package the venv needs); the method files say
which family each name belongs to (and group the drafter classes the code does not declare). `compat probe
--methods`, doctor's method checks and the matrix's method dimension all read a release's methods here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from compat.core.output import plural
from compat.methods import all_methods, find_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rich.console import Console


@dataclass(frozen=True)
class NameRow:
    name: str
    location: str | None
    runs_as: str | None = None  # an alias or a rewritten name: what the release runs it as
    runs_as_location: str | None = None


@dataclass
class MethodRow:
    """One family in one release: its names there, and what the release's code says about running it."""

    family: str
    title: str
    names: list[NameRow] = field(default_factory=list)
    runs_by: list[str] = field(default_factory=list)  # "DFlashSpeculatorConfig (file:line)", "DFlashWorkerV2 (file:line)"
    drafters: list[str] = field(default_factory=list)  # registered drafter architectures of the family
    reader: list[str] = field(default_factory=list)  # "dflash_config.target_layer_ids +1 (file:line)", per runner
    block: list[str] = field(default_factory=list)  # the block keys the release reads, with defaults
    venv: str | None = None  # a package the serving venv needs, and how to install it
    speculators: list[str] = field(default_factory=list)  # the speculators-format types the release translates
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"family": self.family, "title": self.title,
                "names": [{"name": n.name, "location": n.location, "runs_as": n.runs_as} for n in self.names],
                "runs_by": self.runs_by, "drafters": self.drafters, "layer_id_reader": self.reader, "block": self.block,
                "venv": self.venv, "speculators": self.speculators, "notes": self.notes}


UNKNOWN = "unknown"


def release_methods(report: dict[str, Any]) -> list[MethodRow]:
    """Every family the release has (in compat's order), and a row for names no method file knows."""
    fact = report.get("methods")
    if not isinstance(fact, dict) or not fact.get("present"):
        return []
    engine = str(report.get("engine"))
    rows: dict[str, MethodRow] = {}

    def row(family: str) -> MethodRow:
        if family not in rows:
            title = next((m.title for m in all_methods() if m.family == family), "not known to compat")
            rows[family] = MethodRow(family, title)
        return rows[family]

    per: dict[str, Any] = fact["methods"] if isinstance(fact.get("methods"), dict) else {}
    workers: dict[str, Any] = fact["workers"] if isinstance(fact.get("workers"), dict) else {}
    aliases = {a.get("name"): a for a in fact.get("aliases") or [] if isinstance(a, dict)}
    accepted = fact.get("accepted")
    blocks: dict[str, Any] = fact["block"] if isinstance(fact.get("block"), dict) else {}
    for entry in fact.get("names") or []:
        name = str(entry.get("name"))
        if accepted is not None and name not in accepted:
            continue
        info = dict(per.get(name) or {})
        if name in blocks:  # SGLang: the block keys per member
            info["block"] = {"reads": blocks[name]} if blocks[name] else {"reads": [], "always": True}
        _add(row, engine, name, entry.get("location"), info, workers.get(name))
    for alias_name, alias in aliases.items():
        if isinstance(alias_name, str) and (accepted is None or alias_name in accepted):
            target = row(_family(engine, alias_name))
            target.names.append(NameRow(alias_name, alias.get("location"), alias.get("runs_as"), alias.get("location")))
    _drafters(report, fact, rows)
    _speculators(fact, row)
    _hooks(report, rows)
    order = {m.family: i for i, m in enumerate(all_methods())}
    return sorted(rows.values(), key=lambda r: order.get(r.family, len(order)))


def _family(engine: str, name: str) -> str:
    match = find_name(engine, name)
    return match.method.family if match is not None else UNKNOWN


def _add(row, engine: str, name: str, location: str | None, info: dict[str, Any], worker: dict | None) -> None:
    target: MethodRow = row(_family(engine, name))
    target.names.append(NameRow(name, location, info.get("runs_as"), info.get("location") if info.get("runs_as") else None))
    config = info.get("config_class")
    if isinstance(config, dict) and config.get("class"):
        _once(target.runs_by, f"{config['class']} ({config.get('location')})")
    branch = info.get("runner_branch")
    if isinstance(branch, dict) and branch.get("proposer"):
        _once(target.runs_by, f"{branch['proposer']} ({branch.get('location')})")
    if isinstance(worker, dict) and worker.get("class"):
        _once(target.runs_by, f"{worker['class']} ({worker.get('location')})")
    reader = info.get("layer_id_reader")
    if isinstance(reader, dict):
        for runner in reader.get("runners") or []:
            keys = ", ".join(_key(k) for k in runner.get("keys") or []) or "no key: the default"
            _once(target.reader, f"runner {runner.get('runner')}: {keys} ({runner.get('location')})")
    block = info.get("block")
    if isinstance(block, dict) and block.get("always"):
        rule = next((m.block for m in all_methods() if m.family == target.family), None)
        layout = "anchor-first, gamma wide" if rule is not None and rule.native else "the bonus-anchor block, gamma + 1 wide"
        _once(target.block, f"no block key read: always {layout}")
    if isinstance(block, dict):
        for read in block.get("reads") or []:
            negated = "not " if read.get("negated") else ""
            _once(target.block, f"{negated}{read['key']} (default {read.get('default')!r}, {read.get('location')})")
    venv = info.get("venv")
    if isinstance(venv, dict) and venv.get("module"):
        target.venv = f"{venv['module']} ({venv.get('install') or 'not a dependency'}; {venv.get('where_checked') or venv.get('location')})"
    if not info and not worker and name not in ("NONE",):
        _once(target.notes, f"{name}: no runner branch or worker for it in this release's code")


def _key(key: dict[str, Any]) -> str:
    where = key.get("where")
    name = key.get("key") if where in (None, "top-level") else f"{where}.{key.get('key')}"
    offset = int(key.get("offset") or 0)
    text = f"{name} {offset:+d}"
    if key.get("unshifted_when"):
        text += f" (as is when {key['unshifted_when']})"
    return text


def _drafters(report: dict[str, Any], fact: dict[str, Any], rows: dict[str, MethodRow]) -> None:
    """The registered drafter classes of each family: declared by the release (vLLM 0.34), else by the
    method file's ARCHITECTURES pattern over the registry's speculative classes (vLLM) or every class (SGLang)."""
    declared: dict[str, Any] = fact["declared_drafters"] if isinstance(fact.get("declared_drafters"), dict) else {}
    registry = fact.get("drafters")
    candidates = list(registry) if isinstance(registry, dict) else list(report.get("target_architectures") or {})
    families = {m.family: m for m in all_methods()}
    engine = str(report.get("engine"))
    for arch in sorted(candidates):
        info = declared.get(arch)
        family = _family(engine, info["method"]) if isinstance(info, dict) and info.get("method") else None
        if family is None:
            family = next((f for f, m in families.items() if m.architectures and re.search(m.architectures, arch)), None)
        if family in rows:
            rows[family].drafters.append(arch)


def _hooks(report: dict[str, Any], rows: dict[str, MethodRow]) -> None:
    """SGLang: the block drafters' ids go through the target class's capture hook (the block_targets fact)."""
    hooks = report.get("block_targets")
    if not isinstance(hooks, dict):
        return
    for member, entries in hooks.items():
        family = _family(str(report.get("engine")), member)
        if family not in rows or not isinstance(entries, list):
            continue
        offsets: dict[str, int] = {}
        for entry in entries:
            offsets[repr(entry.get("layer_id_offset"))] = offsets.get(repr(entry.get("layer_id_offset")), 0) + 1
        spread = ", ".join(f"{off} in {plural(n, 'class')}" for off, n in sorted(offsets.items()))
        _once(rows[family].reader, f"the target class's {'set_dflash' if member == 'DFLASH' else 'set_dspark'}_layers_to_capture "
                                   f"adds its offset to the ids: {spread} (compat probe --json: block_targets)")


def _speculators(fact: dict[str, Any], row) -> None:
    """vLLM's `@register_speculator` types: the family each belongs to, what it raises, how it maps the ids."""
    families = {m.family for m in all_methods()}
    for kind, info in (fact.get("speculators_types") or {}).items():
        family = kind if kind in families else kind.rstrip("0123456789")
        if family not in families or not isinstance(info, dict):
            continue
        text = f"{kind} ({info.get('location')})"
        if info.get("raises"):
            text += f": raises {info['raises']}"
        maps = [f"{m['from']} -> {m['writes']} {int(m.get('offset') or 0):+d}" for m in info.get("layer_ids") or []]
        if maps:
            text += ": " + ", ".join(maps)
        row(family).speculators.append(text)


def _once(items: list[str], text: str) -> None:
    if text not in items:
        items.append(text)


def render_methods(report: dict[str, Any], console: Console) -> None:
    """The release's methods, family by family, for `compat probe --methods`."""
    from rich.text import Text

    rows = release_methods(report)
    if not rows:
        console.print(Text("methods: not found in this release", style="yellow"))
        return
    names = sum(len(r.names) for r in rows)
    console.print(Text(f"{names} method names in {len(rows)} families", style="bold"))
    plugins = (report.get("methods") or {}).get("plugins")
    if isinstance(plugins, dict):
        console.print(Text(f"plugins add more: {plugins.get('how') or plugins.get('register')} ({plugins.get('location')})"))
    for row in rows:
        console.print(Text(f"{row.title} ({row.family})", style="bold cyan"))
        shown = []
        for n in row.names:
            text = n.name + (f" -> {n.runs_as}" if n.runs_as else "")
            shown.append(f"{text} ({n.location})" if len(row.names) <= 3 else text)
        for label, items in (("names", shown), ("runs by", row.runs_by), ("drafters", row.drafters),
                             ("layer ids", row.reader), ("block", row.block), ("venv", [row.venv] if row.venv else []),
                             ("speculators", row.speculators),
                             ("notes", row.notes)):
            if items:
                console.print(Text.assemble(f"  {label:<11} ", ("; ".join(items) if label != "drafters" else ", ".join(items))))
