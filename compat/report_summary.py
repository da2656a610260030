"""The one-screen summary `compat probe` leads with: what a person asks of a release before the details.

Read from the probe report (compat/report.py build_report), never recomputed: the methods the release accepts,
how it gates EAGLE-3 targets (a model-type whitelist, or the interface a target class must implement), which layer
ids it feeds the drafter and from where, the keys or flags it accepts, and what compat patched in it. Each line
names where it was read (file:line). Tolerant of every report shape the probes give (a fact absent in a release
says so).
"""

from __future__ import annotations

from typing import Any

from compat import engines
from compat.core.output import plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rich.console import Console

WIDTH_NAMES = 6  # names listed before "and N more"


def _names(items: list[str], limit: int = WIDTH_NAMES) -> str:
    if not items:
        return "(none)"
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _at(value: Any, key: str = "location") -> str | None:
    return value.get(key) if isinstance(value, dict) else None


def methods(report: dict[str, Any]) -> tuple[str, str | None]:
    spec = report.get("speculative_config")
    if isinstance(spec, dict) and spec.get("methods"):
        found = list(spec["methods"])
        eagle = [m for m in found if m.startswith("eagle")]
        return f"{len(found)} in SpeculativeConfig.method: {_names(eagle + [m for m in found if m not in eagle])}", spec.get("methods_location")
    algorithms = report.get("methods")
    if isinstance(algorithms, dict) and algorithms.get("accepted") and "names" in algorithms:
        return _algorithms(algorithms)
    unit = engines.find(report.get("engine"))
    option = unit.setting_option("method") if unit else None  # the flags form's method option (--speculative-algorithm)
    for flag in report.get("cli_flags") or []:
        if isinstance(flag, dict) and option and flag.get("name") == option and flag.get("choices"):
            return f"{option} {' | '.join(flag['choices'])}", flag.get("location")
    return "not found in this release", None


def _algorithms(fact: dict[str, Any]) -> tuple[str, str | None]:
    """SGLang: the names --speculative-algorithm accepts, its aliases and what runs them, where they are declared."""
    aliases = [a for a in fact.get("aliases") or [] if isinstance(a, dict)]
    alias_names = {a.get("name") for a in aliases}
    accepted = [n for n in fact["accepted"] if n not in alias_names]
    text = f"--speculative-algorithm {plural(len(accepted), 'name')} ({fact.get('declared_by')}): {', '.join(accepted)}"
    text += "".join(f"; {a['name']} runs as {a.get('runs_as')} ({a.get('location')})" for a in aliases)
    for promotion in fact.get("promotions") or []:
        text += f"; {'/'.join(promotion.get('from') or [])} become {promotion.get('to')} for {', '.join(promotion.get('decided_by') or []) or promotion.get('when')}"
    plugins = fact.get("plugins")
    if isinstance(plugins, dict):
        text += f"; plugins add more ({plugins.get('register')})"
    where = fact.get("choices_location") if fact.get("choices") else fact.get("location")
    return text, where


def gate(report: dict[str, Any]) -> tuple[str, str | None]:
    whitelist = report.get("eagle3_whitelist") or {}
    targets = [t for t in report.get("eagle3_targets") or [] if isinstance(t, dict) and t.get("role", "target") == "target"]
    classes = _names([t["class"] for t in targets if t.get("class")], 4)
    if whitelist.get("present"):
        types = whitelist.get("model_types") or []
        how = "substring of" if whitelist.get("match") == "substring" else "one of"
        return (f"model-type whitelist: the target's model_type must be {how} {', '.join(types)}; then the interface "
                f"({len(targets)} target classes: {classes})", whitelist.get("location"))
    reason = whitelist.get("reason") or "no model-type whitelist"
    return f"{reason}; {len(targets)} target classes can feed it ({classes})", whitelist.get("location")


def aux_ids(report: dict[str, Any]) -> tuple[str, str | None]:
    aux = report.get("aux_layer_ids") or {}
    default = aux.get("default") or "?"
    capture = aux.get("capture") or ""
    if not aux.get("read_from_config"):
        why = aux.get("reason") or "the drafter's ids are not read"
        return f"default {default} always ({why}); captured: {capture}", aux.get("default_location")
    keys = []
    for runner in aux.get("runners") or [{"runner": None, "keys": aux.get("keys") or []}]:
        for key in runner.get("keys") or []:
            where = key.get("where") or "top-level"
            name = f"{key['key']}" if where == "top-level" else f"{where}.{key['key']}"
            offset = f" (+{key['offset']})" if key.get("offset") else ""
            label = f"{name}{offset}" + (f" [runner {runner['runner']}]" if runner.get("runner") else "")
            if label not in keys:
                keys.append(label)
    where = next((k.get("location") for r in aux.get("runners") or [aux] for k in r.get("keys") or []), None)
    shifts = [_offset_rule(rule) for rule in aux.get("offset_rule") or [] if isinstance(rule, str) and rule.startswith("+")]
    shifted = f"; ids shifted {', '.join(shifts)}" if shifts else ""
    return f"reads {_names(keys, 3)}; else default {default}{shifted}; captured: {capture}", where


def _offset_rule(rule: str) -> str:
    """'+1 unconditional (A, B, C)' -> '+1 unconditional (3 target classes)'."""
    head, sep, classes = rule.partition(" (")
    return f"{head} ({len(classes.rstrip(')').split(', '))} target classes)" if sep else rule


def accepted(report: dict[str, Any]) -> tuple[str, str | None]:
    spec = report.get("speculative_config")
    unit = engines.find(report.get("engine"))
    if isinstance(spec, dict) and spec.get("fields") and (unit is None or unit.spec_in_config):  # not LMDeploy's class
        fields = [f["name"] for f in spec["fields"] if isinstance(f, dict)]
        unknown = "refused" if spec.get("rejects_unknown_keys") else "dropped silently" if spec.get(
            "rejects_unknown_keys") is False else "?"
        return (f"--speculative-config: {plural(len(fields), 'key')} ({_names(fields, 5)}); unknown keys {unknown}",
                spec.get("location"))
    flags = [f["name"] for f in report.get("cli_flags") or [] if isinstance(f, dict) and "speculative" in f.get("name", "")]
    return f"{len(flags)} --speculative-* flags ({_names(flags, 4)})", _at(report.get("server_args"))


def patched(report: dict[str, Any]) -> tuple[str, str | None]:
    patches = report.get("compat_patches") or []
    plugin = report.get("compat_plugin")
    parts = []
    if patches:
        parts.append("compat patch: " + ", ".join(str(p.get("id") or p.get("patch") or p) if isinstance(p, dict) else str(p)
                                                  for p in patches))
    if isinstance(plugin, dict) and plugin:
        parts.append("compat plugin: " + ", ".join(f"{k}={v}" for k, v in plugin.items() if not isinstance(v, (dict, list))))
    return ("; ".join(parts) if parts else "nothing (no compat patch record, no compat plugin)"), None


LINES = (("methods", methods), ("EAGLE-3 gate", gate), ("aux layer ids", aux_ids), ("accepted keys", accepted),
         ("compat patched", patched))


def summary(report: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """(label, text, location) per line of the summary."""
    return [(label, *line(report)) for label, line in LINES]


def render_summary(report: dict[str, Any], console: Console, *, full_hint: str | None = None) -> None:
    from rich.table import Table
    from rich.text import Text

    src = report.get("source") or {}
    console.print(Text.assemble((f"{report['engine']} {report.get('version') or '(version unknown)'}", "bold"),
                                f"  {src.get('kind')}: {src.get('location')}"))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="cyan", no_wrap=True)
    grid.add_column(overflow="fold")
    for label, text, location in summary(report):
        line = Text(text)
        if location:
            line.append(f"  {location}", style="dim")
        grid.add_row(label, line)
    errors = report.get("probe_errors") or []
    if errors:
        grid.add_row("probe errors", Text(", ".join(errors), style="yellow"))
    console.print(grid)
    if full_hint:
        console.print(Text(full_hint, style="dim"))
