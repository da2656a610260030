"""What `compat verify` and `compat doctor --verify` print: the progress line while the engine runs, and the
verify and canary documents for people (rich, imported when printing). The measuring is verify.py and
canary.py; the command lines are compat/commands/verify.py and doctor.py."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any

from compat.core.output import plural

if TYPE_CHECKING:
    from rich.console import Console
    from rich.status import Status


class ProgressLine:
    """What the engine is doing, on stderr: a spinner on a terminal, one line per step otherwise."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.status: Status | None = None
        self.started = time.monotonic()

    def __enter__(self) -> ProgressLine | None:
        if self.enabled and sys.stderr.isatty():
            from rich.console import Console

            self.status = Console(stderr=True).status("starting the engine")
            self.status.start()
        return self if self.enabled else None

    def __call__(self, text: str) -> None:
        line = f"[{time.monotonic() - self.started:5.1f} s] {text}"
        if self.status is not None:
            self.status.update(line)
        else:
            print(f"verify: {line}", file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self.status is not None:
            self.status.stop()


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def render(d: dict[str, Any], console: Console) -> None:
    """A `compat verify` document (run_verify's) for people."""
    from rich.markup import escape
    from rich.text import Text

    platform = d.get("platform") or {}
    console.print(Text.assemble(("compat verify  ", "bold"), f"vllm {d['version']} ({d['distribution']}, "
                                f"{platform.get('device', '?')})  python {d['python']}"))
    t, dr, p = d["target"], d["drafter"], d["prompts"]
    console.print(f"  target   {escape(t['path'])}  {t['architecture']}, {t['num_hidden_layers']} layers"
                  f"{'' if t['tokenizer'] else ', no tokenizer'}")
    method = d.get("method") or {}
    if method:
        how = {"asked": "as asked", "the drafter": "read from the drafter", "default": "the default"}.get(method["chosen_by"], "")
        console.print(f"  method   {method['title']} (\"method\": \"{method['name']}\"; {how})")
    if dr:
        console.print(f"  drafter  {escape(dr['path'])}  {dr['architecture']}")
    kind = "token-id" if p["kind"] == "token-ids" else p["kind"]
    console.print(f"  prompts  {plural(p['count'], kind + ' prompt')} {escape(p['source'])}; {p['max_tokens']} new tokens each, greedy")
    console.print(Text(f"  speculative_config {json.dumps(d['speculative_config'])}"), soft_wrap=True)
    console.print()
    n = d["prompts"]["count"]
    differing = len([m for m in d["mismatches"] if m.get("prompt") is not None])
    ok = d["outputs_equal"]
    console.print(Text.assemble(("PASS " if ok else "FAIL ", "green" if ok else "bold red"),
                                f"outputs equal with and without speculation on {n - differing}/{n} prompts"))
    for m in d["mismatches"][:4]:
        console.print(f"     prompt {m.get('prompt')}: first difference at token {m.get('first_difference_at')}")
    a = d["acceptance"]
    if a["rate"] is None:
        console.print(f"     acceptance: {a.get('note')}")
    else:
        console.print(f"     acceptance {_pct(a['rate'])} of draft tokens ({a['num_accepted_tokens']}/{a['num_draft_tokens']});"
                      f" per position {' / '.join(_pct(x) for x in a['per_position'])};"
                      f" mean accepted length {a['mean_accepted_length']:.2f}")
    tp = d["throughput"]
    console.print(f"     tokens/s {tp['plain_tokens_per_s']} plain, {tp['speculative_tokens_per_s']} speculative"
                  + (f": speed-up {tp['speedup']:.2f}x" if tp["speedup"] else ""))
    for failure in d["failures"]:
        if not failure.startswith("greedy outputs differ"):
            console.print(Text.assemble(("FAIL ", "bold red"), failure))
    if d.get("min_acceptance") is not None and a["rate"] is not None and a["rate"] >= d["min_acceptance"]:
        console.print(Text.assemble(("PASS ", "green"), f"acceptance {a['rate']:.3f} >= --min-acceptance {d['min_acceptance']}"))
    console.print(Text(f"log: {d['log']}", style="dim"), soft_wrap=True)


def _ids(ids: list[int | None] | None) -> str:
    return "-" if ids is None else ", ".join("?" if i is None else str(i) for i in ids)


def render_canary(d: dict[str, Any], console: Console) -> None:
    """A `compat verify --canary` document (run_canary's) for people."""
    from rich.table import Table
    from rich.text import Text

    platform = d.get("platform") or {}
    console.print(Text.assemble(("compat verify --canary  ", "bold"),
                                f"vllm {d['version']} ({d['distribution']}, {platform.get('device', '?')})  python {d['python']}"))
    table = Table(show_edge=False, header_style="bold", box=None, pad_edge=False)
    for column in ("family", "ids declared", "where", "fed (measured)", "predicted (probe)", "d2t", "fc", "result"):
        table.add_column(column)
    styles = {"agrees": "green", "disagrees": "bold red", "inconclusive": "yellow", "cannot-run": "yellow"}
    for row in d["canary"]:
        predicted = _ids(row["predicted_ids"]) if row["predicted_ids"] or not row.get("predictions") else \
            "; ".join(f"{p['by']}: {_ids(p['ids'])}" for p in row["predictions"])
        table.add_row(row["family"], _ids(row["declared_ids"]), row["where"] or "(none: default)", _ids(row["fed_ids"]),
                      predicted, {True: "applied", False: "ignored", None: "-"}[row["d2t_applied"]],
                      f"{row['fc']['in_features']} {'loads' if row['fc']['loaded'] else '-'}",
                      f"[{styles.get(row['status'], '')}]{row['status']}[/]")
    console.print(table)
    shown = set()
    for row in d["canary"]:
        if row["status"] == "cannot-run" and row["family"] not in shown:
            shown.add(row["family"])
            console.print(Text(f"{row['family']}: cannot run here: {(row['error'] or '')[:300]}"), soft_wrap=True)
            for patch in row.get("needs_patch") or []:
                console.print(Text.assemble(("  fix: ", "cyan"), patch["command"]), soft_wrap=True)
        elif row["status"] in ("disagrees", "inconclusive"):
            console.print(Text(f"{row['family']} {row['case']}: {row['detail']}"), soft_wrap=True)
    from compat.verify.canary import measured

    if d["agrees"]:
        verdict = "every measured case agrees with the probe"
    elif not measured(d["canary"]):
        verdict = d.get("could_not_run") or "could not run"
    else:
        verdict = "probe bug or unreadable measurement: see the rows above"
    console.print(Text.assemble(("verdict: ", "bold"), (verdict, "green" if d["agrees"] else "bold red")))
    console.print(Text(f"log: {d['log']}", style="dim"), soft_wrap=True)
