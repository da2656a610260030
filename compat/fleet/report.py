"""The fleet's results as one table (host, engine, verdict or state, fixes) with the details per host, or
one JSON document; which hosts differ; and the exit code.

A fleet is mixed when its answering hosts differ in what a multi-node deployment needs to be the same:
the engine and its version, the patches compat applied (its record), the compat plugin. Each
command's result says these in its own keys; `fingerprint` reads them, and only the parts a command
reports are compared.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from compat.core.output import plural
from compat.fleet.outcome import Outcome

if TYPE_CHECKING:
    from rich.console import Console

# Commands whose purpose is a deployment that works: a mixed fleet fails them (exit 1). probe and env
# describe what is there, so they flag it and exit 0.
MIXED_FAILS = frozenset({"doctor", "patch", "plugin", "verify"})


def _patch_ids(records: Any) -> list[str]:
    if not isinstance(records, list):
        return []
    return sorted(str(p.get("id")) for p in records if isinstance(p, dict) and p.get("id"))


def _plugin_state(plugin: Any) -> str:
    """'none', or 'ENGINE built for VERSION: ids' (one per plugin)."""
    plugins = plugin if isinstance(plugin, list) else [plugin] if isinstance(plugin, dict) else []
    plugins = [p for p in plugins if p and p.get("installed", True)]
    if not plugins:
        return "none"
    return "; ".join(f"{p.get('engine')} for {p.get('engine_version')}: {','.join(_patch_ids(p.get('patches')) or ['-'])}"
                     + (" (damaged)" if p.get("damaged") else "") for p in plugins)


def fingerprint(command: str, r: dict[str, Any]) -> dict[str, str]:
    """What must match across a fleet, as far as this command's result says it."""
    out: dict[str, str] = {}
    if "interpreters" in r:  # env
        engines = [e for i in r["interpreters"] for e in i.get("engines") or []]
        out["engine"] = ", ".join(f"{e['engine']} {e['version']}" for e in engines) or "none"
        out["patches"] = ", ".join(",".join(_patch_ids(e.get("patches"))) or "-" for e in engines) or "-"
        out["plugin"] = "; ".join(_plugin_state(i.get("plugins")) for i in r["interpreters"] if not isinstance(i.get("plugins"), dict))
        return out
    if "installed" in r and isinstance(r["installed"], list):  # probe without --engine
        out["engine"] = ", ".join(f"{e['engine']} {e['version']}" for e in r["installed"]) or "none"
        return out
    if r.get("engine") and r.get("version" if command != "plugin" else "engine_version"):
        out["engine"] = f"{r['engine']} {r.get('version') or r.get('engine_version')}"
    if command == "probe":
        out["patches"] = ",".join(_patch_ids(r.get("compat_patches"))) or "-"
        out["plugin"] = _plugin_state(r.get("compat_plugin"))
    elif command == "patch":
        action = r.get("action")
        if action == "status":
            out["patches"] = ",".join(_patch_ids(r.get("applied"))) or "-"
        elif action == "apply":  # what the record holds now: applied by this run, or before it
            out["patches"] = ",".join(sorted(p["id"] for p in r.get("patches", [])
                                             if p.get("state") == "apply" or p.get("by") == "compat")) or "-"
        elif action == "revert":
            out["patches"] = "-"
    elif command == "plugin":
        if r.get("action") == "status":
            out["plugin"] = _plugin_state(r) if r.get("installed") else "none"
        elif r.get("action") == "install":
            out["plugin"] = _plugin_state({**r, "installed": True})
        if r.get("engine_version"):
            out["engine"] = f"{r['engine']} {r['engine_version']}"
    return out


def state(command: str, r: dict[str, Any]) -> str:
    """The verdict or the state, in a few words."""
    if command in ("doctor", "verify") and r.get("verdict"):
        return str(r["verdict"])
    if command == "patch" and r.get("action") == "revert":
        return f"reverted: {', '.join(r.get('reverted') or []) or 'nothing to revert'}"
    if command == "patch":
        counts: dict[str, int] = {}
        for p in r.get("patches", []):
            counts[p.get("state", "?")] = counts.get(p.get("state", "?"), 0) + 1
        return f"{r.get('action', 'apply')}: " + (", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no patch")
    if command == "plugin":
        action = r.get("action")
        if action == "status":
            return f"plugin {_plugin_state(r) if r.get('installed') else 'not installed'}"
        if action == "remove":
            return f"plugin removed ({plural(len(r.get('removed') or []), 'file')})" if r.get("removed") else "no plugin to remove"
        return f"plugin installed: {','.join(_patch_ids(r.get('patches'))) or '-'}"
    f = fingerprint(command, r)
    return "; ".join(f"{k} {v}" for k, v in f.items() if k != "engine") or "ok"


def fixes(command: str, r: dict[str, Any]) -> str:
    steps = r.get("fix_steps") or []
    if steps:
        return f"{len(steps)}: " + "; ".join(str(s.get("kind", "?")) for s in steps)
    return "-"


def mixed(command: str, outcomes: list[Outcome]) -> dict[str, dict[str, list[str]]]:
    """{part: {value: [hosts]}} for each part on which the answering hosts differ."""
    prints = {o.host: fingerprint(command, o.result) for o in outcomes if o.result is not None}
    differ: dict[str, dict[str, list[str]]] = {}
    for part in sorted({k for p in prints.values() for k in p}):
        values: dict[str, list[str]] = {}
        for host, p in prints.items():
            if part in p:
                values.setdefault(p[part], []).append(host)
        if len(values) > 1:
            differ[part] = values
    return differ


def exit_code(command: str, outcomes: list[Outcome], differ: dict) -> int:
    """0 when every host succeeded (and, for doctor/patch/plugin/verify, the fleet is not mixed); else the code
    of the first host that failed, in the order given; 1 for a mixed fleet whose hosts all succeeded."""
    for o in outcomes:
        if not o.ok:
            return o.exit_code or 1
    return 1 if differ and command in MIXED_FAILS else 0


def document(command: str, outcomes: list[Outcome], differ: dict, code: int, via: str) -> dict[str, Any]:
    return {"command": command, "via": via, "hosts": [o.document() for o in outcomes],
            "mixed": differ, "exit_code": code}


def render(command: str, outcomes: list[Outcome], differ: dict, console: Console, *, via: str = "ssh") -> None:
    from rich.table import Table

    what = "host" if via == "ssh" else "Ray node"
    table = Table(title=f"compat {command} on {len(outcomes)} {what}{'s' if len(outcomes) != 1 else ''}"
                  + ("" if via == "ssh" else f" ({via})"), title_justify="left")
    for column in ("host" if via == "ssh" else "node (address, id)", "engine", "verdict or state", "fixes"):
        table.add_column(column, overflow="fold")
    for o in outcomes:
        if o.result is not None:
            f = fingerprint(command, o.result)
            table.add_row(o.host, f.get("engine", "-"), state(command, o.result), fixes(command, o.result))
        else:  # a host that gave no result is its row: the error and its fix, said there once
            from rich.markup import escape

            error = o.error or {}
            said = str(error.get("error", "")).removeprefix(f"{o.host}: ")
            table.add_row(o.host, "-", f"[red]error (exit {o.exit_code}):[/] {escape(said)}", escape(str(error.get("fix") or "-")))
    console.print(table)
    for part, values in differ.items():
        console.print(f"[bold yellow]mixed fleet:[/] the hosts differ in {part}: "
                      + "; ".join(f"{value} on {', '.join(hosts)}" for value, hosts in values.items()))
    for o in outcomes:
        if o.result is None:
            continue  # its row said everything
        console.print(f"\n[bold]== {o.host}[/]  " + ("[green]ok[/]" if o.ok else f"[red]exit {o.exit_code}[/]")
                      + (f"  ({o.seconds:.1f} s)" if o.seconds else ""))
        for line in details(command, o.result):
            console.print(f"  {line}", markup=False, highlight=False)


def details(command: str, r: dict[str, Any]) -> list[str]:
    """The few lines per host that say what the table cannot: checks that failed, the fix steps, the patches."""
    lines = []
    if r.get("source"):
        s = r["source"]
        lines.append(f"source: {s.get('kind')} {s.get('location')}" + (f" (python {s['python']})" if s.get("python") else ""))
    for c in r.get("checks") or []:
        if c.get("verdict") not in ("pass", None):
            lines.append(f"{c['verdict']}: {c.get('check')}: {c.get('detail')}")
    for s in r.get("fix_steps") or []:
        lines.append(f"fix ({s.get('kind')}): {s.get('command')}")
    if command == "patch":
        for p in r.get("patches", []):
            if p.get("state") != "not-offered":
                lines.append(f"{p.get('state')}: {p.get('id')} ({p.get('versions')})" + (f" by {p['by']}" if p.get("by") else ""))
        if r.get("reverted") is not None:
            lines.append(f"reverted: {', '.join(r['reverted']) or 'nothing'} ({plural(len(r.get('files') or []), 'file')} restored)")
        lines.extend(str(r.get("diff") or "").splitlines())
    for key, value in fingerprint(command, r).items():
        lines.append(f"{key}: {value}")
    return lines


def as_json(doc: dict[str, Any]) -> str:
    return json.dumps({"schema": "compat.fleet/1", **doc}, indent=2)
