"""The matrix as one static HTML page (inline CSS and JS, nothing loaded from the network) and as markdown.

The table is plain HTML: a row per release (grouped by engine), a column per target family x drafter kind (the
user's pair first), each cell doctor's verdict in words and colour. A click (or Enter) on a cell opens its
checks, each with its evidence upstream; the data for that sits in a JSON island with its strings interned,
so a page of 110 releases x 41 columns stays a few megabytes.
"""

from __future__ import annotations

import html
import json
from typing import Any

from compat import engines
from compat.core.output import plural
from compat.matrix.assets import CSS, JS
from compat.matrix.method_templates import METHOD_KINDS
from compat.matrix.build import USER, summary
from compat.matrix.labels import answered, legend, short
from compat.matrix.templates import DRAFTER_KINDS, FAMILIES



class _Interner:
    def __init__(self) -> None:
        self.strings: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: Any) -> int | None:
        if text is None:
            return None
        text = str(text)
        if text not in self._index:
            self._index[text] = len(self.strings)
            self.strings.append(text)
        return self._index[text]


class _Checks:
    """Each distinct check (as the page shows it) once: cells refer to them by index."""

    def __init__(self, s: _Interner) -> None:
        self.s, self.items, self._index = s, [], {}  # type: ignore[var-annotated]

    def __call__(self, check: dict[str, Any]) -> int:
        s = self.s
        item = [s(check["check"]), s(check["title"]), s(check["verdict"]), s(check["detail"]), s(check.get("location")),
                s(check.get("evidence")), s(check.get("fix")), [[s(i["title"]), s(i["url"])] for i in check.get("issues") or []]]
        key = json.dumps(item)
        if key not in self._index:
            self._index[key] = len(self.items)
            self.items.append(item)
        return self._index[key]


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def render_html(document: dict[str, Any], *, command: str = "", generated: str = "") -> str:
    info = summary(document)
    columns = document["columns"]
    s = _Interner()
    checks = _Checks(s)
    cells: list[list[Any]] = []
    by_key = {(r["engine"], r["version"], r["column"]): r for r in document["rows"]}
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           # the page loads nothing: no script, style, font or image from anywhere but itself
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
           "script-src 'unsafe-inline'; img-src data:\">",
           f"<title>compat matrix: speculative decoding on {_esc(', '.join(_shown(e) for e in document['engines']))}</title>",
           f"<style>{CSS}</style><style id=\"filter-style\"></style></head><body>"]
    out.append(_header(document, info, command, generated))
    out.append('<main><div class="wrap"><table id="matrix"><thead><tr><th class="rel" scope="col">release</th>')
    for column in columns:
        user = " user" if column["id"] == USER else ""
        kind = "" if column["id"] == USER else f"<small>{_esc(column['drafter_kind'])}</small>"
        out.append(f'<th scope="col" class="col{user}" title="{_esc(column["target"])} + {_esc(column["drafter"])}">'
                   f'{_esc(column["family"])}{kind}</th>')
    out.append("</tr></thead><tbody>")
    for engine, about in document["engines"].items():
        out.append(f'<tr class="engine"><th colspan="{len(columns) + 1}">{_esc(_shown(engine))} '
                   f'{_esc(about["releases"])}: {plural(len(about["versions"]), "release")}</th></tr>')
        for version in about["versions"]:
            out.append(f'<tr data-engine="{_esc(engine)}"><th class="rel" scope="row">{_esc(version)}</th>')
            for ci, column in enumerate(columns):
                row = by_key.get((engine, version, column["id"]))
                if row is None:
                    out.append("<td></td>")
                    continue
                text, css = short(row["verdict"])
                steps = row.get("fix_steps") or []
                cells.append([s(row["verdict"]), [s(f) for f in row.get("fixes") or []] or ([s(row["error"])] if row.get("error") else []),
                              [s(f) for f in row.get("failing") or []], [s(x) for x in steps],
                              [checks(c) for c in row.get("checks") or []], s(engine), s(version), ci])
                title = row["verdict"] + ("; " + "; ".join(row["fixes"]) if row.get("fixes") else "")
                said = answered(row.get("answers") or {})
                title += "".join(f"; if {flag}: {verdict}" for flag, verdict in (row.get("answers") or {}).items())
                user = " user" if column["id"] == USER else ""
                out.append(f'<td class="c {css}{user}" data-i="{len(cells) - 1}" data-css="{css}" tabindex="0" '
                           f'title="{_esc(title)}">{_esc(text)}'
                           + (f'<small class="ans">{_esc(said)}</small>' if said else "") + '</td>')
            out.append("</tr>")
    out.append("</tbody></table></div></main>")
    out.append('<aside id="details" hidden tabindex="-1" aria-live="polite"><button id="close" class="close" '
               'aria-label="close">\u2715</button><div id="details-body"></div></aside>')
    out.append(_footer(columns))
    data = {"s": s.strings, "checks": checks.items, "cells": cells,
            "columns": [c["label"] for c in columns], "families": [c["family"] for c in columns],
            "kinds": [c["drafter_kind"] for c in columns], "methods": [c.get("method") or "" for c in columns]}
    island = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    out.append(f'<script type="application/json" id="matrix-data">{island}</script>')
    out.append(f"<script>{JS}</script></body></html>")
    return "".join(out)


def _header(document: dict[str, Any], info: dict[str, Any], command: str, generated: str) -> str:
    engines = ", ".join(f"{_shown(e)} {document['engines'][e]['releases']} ({plural(n, 'release')})"
                        for e, n in info["engines"].items())
    families = "".join(f'<option value="{_esc(f)}">{_esc(f)}</option>' for f in info["families"] if f != USER)
    kinds = "".join(f'<option value="{_esc(k)}">{_esc(k)}</option>' for k in info["drafter_kinds"] if k != USER)
    methods = "".join(f'<option value="{_esc(m)}">{_esc(_method_title(m))}</option>' for m in info.get("methods") or [])
    chips = "".join(f'<span class="chip {css}" title="{_esc(verdict)}">{_esc(text)}<span class="lv">: {_esc(verdict)}</span></span>'
                    for text, css, verdict in legend())
    return (f"<header><h1>Which release serves your drafter, by method, and what it needs</h1>"
            f"<p>{_esc(engines)}. Each cell is <code>compat doctor</code>'s verdict for that target family and drafter "
            f"kind on that release; click a cell for its checks and the upstream source each fact was read from.</p>"
            + (f'<p class="long">{_esc(command)}{" · " + _esc(generated) if generated else ""}</p>' if command else "")
            + '<div class="filters"><label>family <select id="family"><option value="">all</option>'
            + families + '</select></label><label>drafter <select id="kind"><option value="">all</option>' + kinds
            + '</select></label><label>method <select id="method"><option value="">all</option>' + methods
            + f'</select></label></div><div class="legend">{chips}</div></header>')


def _method_title(family: str) -> str:
    from compat.methods import get_method

    try:
        return get_method(family).title
    except KeyError:
        return family


def _footer(columns: list[dict[str, Any]]) -> str:
    used = {c["family"] for c in columns}
    families = "".join(
        f"<li><b>{_esc(f.id)}</b>: {_esc(f.label)}: model_type {_esc(f.config['model_type'])}, "
        f"{_esc(f.config['architectures'][0])}, {f.layers} layers, hidden {f.text['hidden_size']}, vocab {f.text['vocab_size']}"
        + (", MLA" if "kv_lora_rank" in f.text else "") + "</li>" for f in FAMILIES if f.id in used)
    kinds = "".join(f"<li><b>{_esc(k)}</b>: {_esc(v)}</li>" for k, v in DRAFTER_KINDS.items())
    kinds += "".join(f"<li><b>{_esc(mk.kind)}</b> ({_esc(_method_title(mk.method))}): {_esc(mk.label)}</li>" for mk in METHOD_KINDS
                     if any(c["drafter_kind"] == mk.kind for c in columns))
    user = [c for c in columns if c["id"] == USER]
    mine = f"<p><b>your pair</b>: {_esc(user[0]['target'])} + {_esc(user[0]['drafter'])}</p>" if user else ""
    return (f"<footer>{mine}<p>Target families (config.json fields as the models publish them):</p><ul>{families}</ul>"
            f"<p>Drafter kinds:</p><ul>{kinds}</ul><p>Made by <code>compat matrix</code>; the same data is in "
            f"matrix.json beside this page.</p></footer>")


def render_markdown(document: dict[str, Any]) -> str:
    """A table per engine: consecutive releases with the same row are one line; the cell says the verdict in words."""
    columns = document["columns"]
    by_key = {(r["engine"], r["version"], r["column"]): r for r in document["rows"]}
    lines: list[str] = []
    for engine, about in document["engines"].items():
        lines += [f"**{_shown(engine)} {about['releases']}**", "",
                  "| releases | " + " | ".join(_md_head(c) for c in columns) + " |",
                  "|---|" + "---|" * len(columns)]
        groups: list[list[Any]] = []
        for version in about["versions"]:
            cells = [_md_cell(by_key.get((engine, version, c["id"]))) for c in columns]
            if groups and groups[-1][2] == cells:
                groups[-1][1] = version
            else:
                groups.append([version, version, cells])
        for first, last, cells in groups:
            span = first if first == last else f"{first} - {last}"
            lines.append(f"| {span} | " + " | ".join(cells) + " |")
        lines.append("")
    lines.append("cells: " + "; ".join(f"{text} = {verdict}" for text, _, verdict in legend()))
    return "\n".join(lines) + "\n"


def _md_head(column: dict[str, Any]) -> str:
    return column["family"] if column["id"] == USER else f"{column['family']}<br>{column['drafter_kind']}"


def _md_cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return ""
    text = short(row["verdict"])[0]
    fixes = [f for f in row.get("fixes") or [] if f.startswith("use ")]
    said = answered(row.get("answers") or {})
    return (text + (f" ({fixes[0]})" if fixes and text == "no" else "") + (f" ({said})" if said else "")).replace("|", "\\|")


def _shown(engine: str) -> str:
    """The engine as people write it ("vLLM"); a name compat has no unit for, as the document says it."""
    unit = engines.find(engine)
    return unit.display_name if unit is not None else engine
