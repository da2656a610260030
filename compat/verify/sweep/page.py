"""The sweep as one static page: speed-up against concurrency with the crossover marked, acceptance per position
against the published references, and latency bands (p50 to p95) of both servers. Inline SVG drawn here, inline
CSS, no script and nothing loaded from anywhere (a plain install writes it; it opens from a file, offline, on a
phone: every chart scales to the width, the table scrolls inside its box). Every text is escaped."""

from __future__ import annotations

import math
from html import escape

from compat.acceptance import REFERENCES

W, H = 640, 300
PAD_L, PAD_R, PAD_T, PAD_B = 56, 16, 20, 44
SPEC, BASE, REF, CROSS = "#1f6feb", "#8b949e", "#d29922", "#cf222e"

CSS = """
*{box-sizing:border-box}body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;padding:12px;
color:#1f2328;background:#fff;max-width:980px;margin:0 auto}h1{font-size:1.3em;margin:.4em 0}h2{font-size:1.1em;
margin:1.2em 0 .3em}p,li{overflow-wrap:anywhere}svg{width:100%;height:auto;display:block}.verdict{padding:10px 12px;
border-radius:6px;background:#f6f8fa;border-left:4px solid #1f6feb}.none{border-left-color:#cf222e}
.every{border-left-color:#1a7f37}.wide{overflow-x:auto;max-width:100%}table{border-collapse:collapse;font-size:13px}
td,th{padding:3px 8px;border-bottom:1px solid #d0d7de;text-align:right;white-space:nowrap}th:first-child,
td:first-child{text-align:left}.muted{color:#656d76;font-size:13px}.legend span{margin-right:14px;white-space:nowrap}
.sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
"""


def _x_axis(levels: list[int]):
    lo, hi = math.log2(min(levels)), math.log2(max(levels))
    span = hi - lo or 1.0

    def x(c: float) -> float:
        if hi == lo:
            return PAD_L + (W - PAD_L - PAD_R) / 2
        return PAD_L + (math.log2(c) - lo) / span * (W - PAD_L - PAD_R)
    return x


def _y_axis(top: float):
    def y(v: float) -> float:
        return PAD_T + (1 - v / top) * (H - PAD_T - PAD_B)
    return y


def _frame(levels: list[int], x, y, top: float, label: str, fmt: str) -> list[str]:
    out = [f'<rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/>']
    for i in range(5):
        v = top * i / 4
        out.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eaeef2"/>')
        out.append(f'<text x="{PAD_L - 6}" y="{y(v) + 4:.1f}" font-size="12" text-anchor="end">{fmt.format(v)}</text>')
    for c in levels:
        out.append(f'<text x="{x(c):.1f}" y="{H - PAD_B + 18}" font-size="12" text-anchor="middle">{c}</text>')
    out.append(f'<text x="{(PAD_L + W - PAD_R) / 2:.1f}" y="{H - 6}" font-size="12" text-anchor="middle">'
               f'{escape(label)}</text>')
    return out


def _svg(title: str, body: list[str]) -> str:
    return (f'<svg viewBox="0 0 {W} {H}" role="img" aria-label="{escape(title)}" '
            f'font-family="system-ui,sans-serif">' + "".join(body) + "</svg>")


def speedup_chart(d: dict) -> str:
    levels = [lv for lv in d["levels"] if lv["speedup"] is not None]
    if not levels:
        return '<p class="muted">No speed-up: without --baseline (the same target without speculation) it cannot be measured.</p>'
    cs = [lv["concurrency"] for lv in levels]
    top = max(1.25, max(lv["speedup"] for lv in levels) * 1.15)
    x, y = _x_axis(cs), _y_axis(top)
    body = _frame(cs, x, y, top, "concurrency (requests in flight)", "{:.2f}x")
    body.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{y(1):.1f}" y2="{y(1):.1f}" stroke="#57606a" '
                f'stroke-dasharray="5 4"/><text x="{W - PAD_R}" y="{y(1) - 5:.1f}" font-size="12" text-anchor="end">'
                'break-even 1.00x</text>')
    points = " ".join(f"{x(lv['concurrency']):.1f},{y(lv['speedup']):.1f}" for lv in levels)
    body.append(f'<polyline points="{points}" fill="none" stroke="{SPEC}" stroke-width="2.5"/>')
    for lv in levels:
        fill = SPEC if lv["speedup"] > 1 else CROSS
        body.append(f'<circle cx="{x(lv["concurrency"]):.1f}" cy="{y(lv["speedup"]):.1f}" r="5" fill="{fill}">'
                    f'<title>concurrency {lv["concurrency"]}: {lv["speedup"]:.2f}x</title></circle>')
        body.append(f'<text x="{x(lv["concurrency"]):.1f}" y="{y(lv["speedup"]) - 10:.1f}" font-size="12" '
                    f'text-anchor="middle">{lv["speedup"]:.2f}x</text>')
    cross = d["verdict"].get("crossover")
    if cross:
        cx = x(min(max(cross, min(cs)), max(cs)))
        body.append(f'<line class="crossover" x1="{cx:.1f}" x2="{cx:.1f}" y1="{PAD_T}" y2="{H - PAD_B}" stroke="{CROSS}" '
                    f'stroke-width="2" stroke-dasharray="6 4"/><text x="{cx + 4:.1f}" y="{PAD_T + 12}" font-size="12" '
                    f'fill="{CROSS}">crossover ≈ {cross:g}</text>')
    return _svg("speed-up against concurrency", body)


def acceptance_chart(d: dict) -> str:
    measured = d["acceptance"]["per_position"] or []
    refs = [r for r in REFERENCES if r.per_position]
    k = max([len(measured)] + [len(r.per_position) for r in refs])
    if not measured:
        return '<p class="muted">No per-position acceptance: the server publishes none.</p>'
    x0, width = PAD_L, (W - PAD_L - PAD_R) / k
    y = _y_axis(1.0)
    body = [f'<rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/>']
    for i in range(5):
        v = i / 4
        body.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eaeef2"/>'
                    f'<text x="{PAD_L - 6}" y="{y(v) + 4:.1f}" font-size="12" text-anchor="end">{v:.0%}</text>')
    for i in range(k):
        cx = x0 + width * (i + 0.5)
        body.append(f'<text x="{cx:.1f}" y="{H - PAD_B + 18}" font-size="12" text-anchor="middle">position {i}</text>')
        if i < len(measured):
            v = measured[i]
            body.append(f'<rect class="measured" x="{cx - width * 0.3:.1f}" y="{y(v):.1f}" width="{width * 0.6:.1f}" '
                        f'height="{y(0) - y(v):.1f}" fill="{SPEC}"><title>measured: {v:.1%}</title></rect>'
                        f'<text x="{cx:.1f}" y="{y(v) - 5:.1f}" font-size="12" text-anchor="middle">{v:.0%}</text>')
        for r in refs:
            if i < len(r.per_position):
                v = r.per_position[i]
                body.append(f'<line class="reference" x1="{cx - width * 0.38:.1f}" x2="{cx + width * 0.38:.1f}" '
                            f'y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="{REF}" stroke-width="2"><title>{escape(r.source)}: '
                            f'{escape(r.pair)}: {v:.1%}</title></line>')
    body.append(f'<text x="{(PAD_L + W - PAD_R) / 2:.1f}" y="{H - 6}" font-size="12" text-anchor="middle">draft position '
                '(accepted with every earlier one)</text>')
    return _svg("acceptance per position against published references", body)


def latency_chart(d: dict, key: str, title: str) -> str:
    rows = [lv for lv in d["levels"] if lv["latency"][key]]
    if not rows:
        return f'<p class="muted">No {escape(title)} measured.</p>'
    cs = [lv["concurrency"] for lv in rows]
    sides = [("speculative", SPEC, [lv["latency"][key] for lv in rows])]
    if all(lv["baseline"] and lv["baseline"]["latency"][key] for lv in rows):
        sides.append(("baseline", BASE, [lv["baseline"]["latency"][key] for lv in rows]))
    top_s = max(b["p95"] for _, _, bands in sides for b in bands) or 1.0
    unit, scale = ("ms", 1000.0) if top_s < 1 else ("s", 1.0)
    sides = [(n, c, [{q: b[q] * scale for q in ("p50", "p95")} for b in bands]) for n, c, bands in sides]
    top = top_s * scale * 1.15
    x, y = _x_axis(cs), _y_axis(top)
    body = _frame(cs, x, y, top, f"concurrency; line: p50, band: p50 to p95 ({unit})", "{:.3g}")
    for name, colour, bands in sides:
        upper = " ".join(f"{x(c):.1f},{y(b['p95']):.1f}" for c, b in zip(cs, bands))
        lower = " ".join(f"{x(c):.1f},{y(b['p50']):.1f}" for c, b in reversed(list(zip(cs, bands))))
        body.append(f'<polygon class="band" points="{upper} {lower}" fill="{colour}" fill-opacity="0.18" stroke="none"/>')
        line = " ".join(f"{x(c):.1f},{y(b['p50']):.1f}" for c, b in zip(cs, bands))
        body.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"><title>{name} p50</title>'
                    '</polyline>')
    return _svg(title, body)


def _table(d: dict) -> str:
    from compat.verify.sweep.render import HEADER, rows

    head = "".join(f"<th>{escape(h)}</th>" for h in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows(d))
    return f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def page(d: dict) -> str:
    s, v = d["server"], d["verdict"]
    legend = (f'<p class="legend muted"><span><i class="sw" style="background:{SPEC}"></i>speculative</span>'
              f'<span><i class="sw" style="background:{BASE}"></i>baseline</span>'
              f'<span><i class="sw" style="background:{REF}"></i>published references</span></p>')
    reasons = "".join(f"<li>{escape(r['text'])}</li>" for r in v["reasons"])
    stopped = ""
    if d["stopped"]:
        st = d["stopped"]
        stopped = (f'<p class="verdict none">Stopped at concurrency {st["concurrency"]} during the {escape(st["during"])} '
                   f'({escape(st["reason"])}: {escape(str(st["error"]))}); the levels before it are shown.</p>')
    refs = "".join(f"<li>{escape(r.source)}: {escape(r.pair)} ({escape(r.setting)}): "
                   + " / ".join(f"{p:.0%}" for p in r.per_position) + "</li>" for r in REFERENCES if r.per_position)
    baseline = d["baseline"]["url"] if d["baseline"] else "none (the speed-up cannot be known)"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Does speculation pay? {escape(s['model'])}</title><style>{CSS}</style></head><body>
<h1>Does speculation pay at this load?</h1>
<p class="muted">{escape(s['model'])} on {escape(s['engine'])} {escape(s['version'] or '')} at {escape(s['url'])}; baseline
{escape(baseline)}; {escape(s['method'] or 'method not reported')}, {s['num_speculative_tokens'] or '?'} speculative tokens.</p>
<p class="verdict {escape(v['pays'])}" id="verdict"><b>Verdict:</b> {escape(v['summary'])}</p><ul>{reasons}</ul>{stopped}
<h2>Speed-up against concurrency</h2>{speedup_chart(d)}
<h2>Acceptance per draft position</h2>{acceptance_chart(d)}
<p class="muted">Acceptance: {escape(d['acceptance']['verdict'])} ({escape(d['acceptance']['why'])}). References:</p><ul class="muted">{refs}</ul>
<h2>Time to first token</h2>{latency_chart(d, 'ttft', 'time to first token')}
<h2>Time per output token</h2>{latency_chart(d, 'itl', 'time per output token')}{legend}
<h2>Every level</h2>{_table(d)}
<p class="muted">compat verify --server, {len(d['levels'])} of {len(d['concurrency'])} levels measured.</p>
</body></html>
"""
