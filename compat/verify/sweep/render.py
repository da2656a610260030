"""The sweep for people (a terminal or a log) and as markdown (`--format md`): the same figures as the JSON
document, one row per level, the crossover, the verdict and its reasons."""

from __future__ import annotations

from typing import Any


def _s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"


def _band(band: dict | None) -> str:
    return "-" if not band else f"{_s(band['p50'])} / {_s(band['p95'])}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _num(x: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if x is None else fmt.format(x)


HEADER = ("concurrency", "tokens/s", "baseline tokens/s", "speed-up", "TTFT p50 / p95", "ITL p50 / p95",
          "tokens/step", "step cost", "per position")


def rows(d: dict) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for lv in d["levels"]:
        base = lv["baseline"] or {}
        acc = lv["acceptance"]
        out.append((str(lv["concurrency"]) + (" (cut short)" if lv["cut_short"] else ""), _num(lv["tokens_per_s"], "{:.1f}"),
                    _num(base.get("tokens_per_s"), "{:.1f}"), _num(lv["speedup"], "{:.2f}x"), _band(lv["latency"]["ttft"]),
                    _band(lv["latency"]["itl"]), _num(acc["mean_accepted_length"]), _num(lv["step_cost"], "{:.2f}x"),
                    " / ".join(_pct(p) for p in acc["per_position"]) or "-"))
    return out


def _head_lines(d: dict) -> list[tuple[str, str]]:
    s, b, p = d["server"], d["baseline"], d["prompts"]
    spec = ", ".join(x for x in (s["method"] or "method not reported",
                                 f"{s['num_speculative_tokens']} speculative tokens" if s["num_speculative_tokens"] else "",
                                 f"drafter {s['draft_model']}" if s["draft_model"] else "drafter not reported") if x)
    lines = [("speculation", spec if s["speculating"] is not False else "none (the server does not speculate)")]
    if b:
        pair = d["pair"] or {}
        lines.append(("baseline", f"{b['url']}  {b['engine']} {b['version'] or ''}, no speculation; model {pair.get('model')}"))
        lines.append(("tokenizer", pair.get("tokenizer") or "-"))
        lines += [("note", n) for n in pair.get("notes") or []]
    else:
        lines.append(("baseline", "none: the speed-up and whether speculation pays cannot be known (--baseline URL2)"))
    per_level = ", ".join(f"{k}: {v}" for k, v in p["requests_per_level"].items())
    sampling = "greedy" if p["temperature"] == 0 else f"temperature {p['temperature']}"
    source = "built-in chat prompts" if p["source"] == "built-in" else f"prompts from {p['source']}"
    lines.append(("requests", f"{source}, up to {p['max_tokens']} tokens, {sampling}; per level {per_level} "
                              f"(at most {p['level_timeout_s']:.0f} s each)"))
    return lines


def _tail_lines(d: dict) -> list[tuple[str, str]]:
    acc = d["acceptance"]
    per = " / ".join(_pct(x) for x in acc["per_position"])
    out = [("acceptance", f"{acc['verdict']} ({acc['why']})" + (f"; per position {per}" if per else "") +
            (f"; {acc['mean_accepted_length']:.2f} tokens per step" if acc["mean_accepted_length"] else ""))]
    for lv in d["levels"]:
        if lv["other_traffic"]:
            out.append(("traffic", f"concurrency {lv['concurrency']}: {lv['traffic']}"))
    return out


def render_sweep(d: dict, console: Any) -> None:
    from rich.text import Text

    s = d["server"]
    console.print(Text.assemble(("compat verify --server  ", "bold"), f"{s['url']}  {s['engine']} "
                                f"{s['version'] or '(version not reported)'}  model {s['model']}"), soft_wrap=True)
    for label, text in _head_lines(d):
        console.print(Text(f"  {label:<12} {text}"), soft_wrap=True)
    console.print()
    table = [HEADER, *rows(d)]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADER))]
    for number, row in enumerate(table):
        line = "  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
        console.print(Text(line, style="bold" if number == 0 else ""), soft_wrap=True)
    console.print()
    for label, text in _tail_lines(d):
        console.print(Text(f"  {label:<12} {text}"), soft_wrap=True)
    _verdict(d, console)


def _verdict(d: dict, console: Any) -> None:
    from rich.text import Text

    v = d["verdict"]
    style = {"every": "green", "up-to": "yellow", "from": "yellow", "none": "bold red"}.get(v["pays"], "yellow")
    console.print()
    console.print(Text.assemble(("verdict: ", "bold"), (v["summary"], style)), soft_wrap=True)
    for reason in v["reasons"]:
        console.print(Text(f"  why: {reason['text']}"), soft_wrap=True)
    if d["stopped"]:
        stop = d["stopped"]
        console.print(Text.assemble(("stopped: ", "bold red"), f"at concurrency {stop['concurrency']}, during the "
                                    f"{stop['during']} ({stop['reason']}: {stop['error']}); the levels before it are kept"),
                      soft_wrap=True)
    for failure in d["failures"]:
        if failure["check"] in ("requests", "baseline"):
            console.print(Text.assemble(("FAIL ", "bold red"), failure["message"]), soft_wrap=True)
    if d.get("next"):
        console.print(Text.assemble(("next: ", "cyan"), d["next"]), soft_wrap=True)
    lines = compare_lines(d)
    if lines:
        console.print()
        for line in lines:
            console.print(Text(line, style="bold red" if line.startswith("REGRESSION") else ""), soft_wrap=True)
    for line in d.get("written") or []:
        console.print(Text(f"wrote {line}", style="dim"), soft_wrap=True)


def markdown(d: dict) -> str:
    s = d["server"]
    out = [f"# Does speculation pay? {s['model']} on {s['engine']} {s['version'] or ''}".rstrip(), "",
           f"Server `{s['url']}`."]
    out += [f"- **{label}**: {text}" for label, text in _head_lines(d)]
    out += ["", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows(d)]
    out += [""] + [f"- **{label}**: {text}" for label, text in _tail_lines(d)]
    v = d["verdict"]
    out += ["", f"**Verdict**: {v['summary']}", ""] + [f"- {r['text']}" for r in v["reasons"]]
    if d["stopped"]:
        stop = d["stopped"]
        out += ["", f"**Stopped** at concurrency {stop['concurrency']} during the {stop['during']} ({stop['reason']}: "
                    f"{stop['error']}); the levels before it are kept."]
    lines = compare_lines(d)
    if lines:
        out += ["", "## Compared with the profile", ""] + [f"    {line}" for line in lines]
    return "\n".join(out) + "\n"


def compare_lines(d: dict) -> list[str]:
    c = d.get("compare")
    if not c:
        return []
    out = [f"compare with {c['profile']}: {c['release']['words']}"]
    for row in c["positions"]:
        if row["then"] is not None and row["now"] is not None:
            out.append(f"  position {row['position']}: {row['then']:.3f} then, {row['now']:.3f} now ({row['status']})")
    for row in c["levels"]:
        sp = row["speedup"]
        if sp["then"] is not None and sp["now"] is not None:
            out.append(f"  concurrency {row['concurrency']}: speed-up {sp['then']:.2f}x then, {sp['now']:.2f}x now "
                       f"({row['status']}{': ' + row['why'] if row.get('why') else ''})")
    out.append(("REGRESSION: " if c["regressions"] else "") + c["summary"])
    return out
