"""`compat verify --server` for people: what the server is, what was sent, what it measured, the verdict and
what to run next. The same facts as the --json document, which also carries the rule's references."""

from __future__ import annotations

from typing import Any

STYLE = {"healthy": "green", "degraded": "yellow", "collapsed": "bold red", "no-speculation": "bold red", "unknown": "yellow"}


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"


def render_server(d: dict, console: Any) -> None:
    from rich.text import Text

    server, prompts, acc = d["server"], d["prompts"], d["acceptance"]
    console.print(Text.assemble(("compat verify --server  ", "bold"), f"{server['url']}  {server['engine']} "
                                f"{server['version'] or '(version not reported)'}  model {server['model']}"), soft_wrap=True)
    _line(console, "speculation", _speculation(server))
    names = server["names_from"]
    drafts = names["series"].get("num_drafts") or names["series"].get("verify_calls") or names["series"].get("accept_length")
    _line(console, "names", f"read from {names['engine']} {names['release']}'s source"
          + (f": {drafts['sample']} ... ({drafts['location']})" if drafts else "") + (f"; {names['note']}" if names["note"] else ""))
    cats = ", ".join(f"{k} {v}" for k, v in prompts["categories"].items())
    source = "built-in chat prompts" if prompts["source"] == "built-in" else f"prompts from {prompts['source']}"
    _line(console, "prompts", f"{prompts['count']} {source} ({cats}); up to {prompts['max_tokens']} tokens, "
          f"{prompts['sampling']}, concurrency {prompts['concurrency']}")
    for note in server["notes"] + ([prompts["note"]] if prompts.get("note") else []):
        _line(console, "note", note)
    console.print()
    _line(console, "acceptance", _acceptance(acc))
    for note in acc.get("notes") or []:
        _line(console, "", note)
    _line(console, "traffic", d["traffic"]["detail"])
    lat, tps = d["latency"], d["tokens_per_s"]
    _line(console, "latency", f"time to first token p50 {_s((lat['ttft'] or {}).get('p50'))}, p90 "
          f"{_s((lat['ttft'] or {}).get('p90'))}; per output token p50 {_s((lat['itl'] or {}).get('p50'))}")
    _line(console, "tokens/s", f"{tps['aggregate']} aggregate, {tps['per_request_median']} per request (median)")
    reqs = d["requests"]
    if reqs["failed"]:
        _line(console, "requests", f"{reqs['failed']} of {reqs['sent']} failed: {reqs['errors'][0]}")
    if d.get("baseline"):
        _line(console, "baseline", _baseline(d["baseline"]))
    console.print()
    verdict = d["verdict"]
    console.print(Text.assemble(("verdict: ", "bold"), (verdict, STYLE.get(verdict, "")), f"  ({d['why']})"), soft_wrap=True)
    diag = d["diagnosis"]
    if diag["pattern"] not in ("no-drafts", "unmeasured") or verdict != "healthy":
        console.print(Text(f"pattern: {diag['pattern']}: {diag['summary']}"), soft_wrap=True)
        for suspect in diag["suspects"]:
            console.print(Text(f"  - {suspect}"), soft_wrap=True)
    for failure in d["failures"]:
        if failure["check"] != "verdict":  # the verdict line above says it
            console.print(Text.assemble(("FAIL ", "bold red"), failure["message"]), soft_wrap=True)
    if d.get("next"):
        console.print(Text.assemble(("next: ", "cyan"), d["next"]), soft_wrap=True)
    from compat.acceptance import RULE_SHORT

    console.print(Text(f"rule: {RULE_SHORT} (the whole rule and its references: --json)", style="dim"), soft_wrap=True)


def _line(console: Any, label: str, text: str) -> None:
    from rich.text import Text

    console.print(Text(f"  {label:<12} {text}"), soft_wrap=True)


def _speculation(server: dict) -> str:
    if server["speculating"] is False:
        return "none (" + server["detected_from"].get("speculating", "the server says so") + ")"
    parts = [server["method"] or "method not reported"]
    if server["num_speculative_tokens"]:
        parts.append(f"{server['num_speculative_tokens']} speculative tokens")
    parts.append(f"drafter {server['draft_model']}" if server["draft_model"] else "drafter not reported")
    return ", ".join(parts)


def _acceptance(acc: dict) -> str:
    if acc["rate"] is None and acc["mean_accepted_length"] is None:
        return "not measured"
    parts = []
    if acc["rate"] is not None:
        counts = f" ({acc['accepted_tokens']}/{acc['draft_tokens']})" if acc.get("draft_tokens") else ""
        parts.append(f"{_pct(acc['rate'])} of draft tokens{counts}")
    if acc["per_position"]:
        parts.append("per position " + " / ".join(_pct(x) for x in acc["per_position"]))
    if acc["mean_accepted_length"] is not None:
        parts.append(f"mean accepted length {acc['mean_accepted_length']:.2f}")
    return "; ".join(parts) + f"  [{acc['scope']}]"


def _baseline(b: dict) -> str:
    speed = f"speed-up {b['speedup']:.2f}x ({b['tokens_per_s']['aggregate']} tokens/s without speculation)" \
        if b.get("speedup") else "speed-up not measured"
    if b.get("outputs_equal") is None:
        equal = b.get("note") or "outputs not compared"
    elif b["outputs_equal"]:
        equal = f"greedy outputs equal on {b['compared']}/{b['compared']} prompts"
    else:
        equal = f"greedy outputs differ on {b['mismatched']} of {b['compared']} prompts"
    return f"{b['url']}: {speed}; {equal}"
