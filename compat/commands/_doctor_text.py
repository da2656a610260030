"""What `compat doctor` prints for people (`--json` prints the diagnosis itself; compat/commands/doctor.py runs it).

Two views of one diagnosis:
- the default: one line per check, its verdict, the check, the fact found and where the fix is (a number in the
  ordered fixes below, or the fix itself) with the file and line the fact was read from, clipped to the terminal's
  width (into a pipe, to LINE_CHARS); then the verdict, the fixes in order, and the launch command;
- `-v` / `--detail`: each check's whole reason, its source line and its own fix, as before.
The verdict, the ordered fixes and the launch line come last in both, in that order.
"""

from __future__ import annotations

import json
import shlex

from compat.core.console import print_hanging
from compat.core.output import plural
from compat.doctor import (
    CANNOT_TELL, DEPENDS, DEPENDS_VENV, DOES_NOT_WORK, FAIL, NEEDS_CONVERT, PASS, WARN, WORKS, WORKS_COMMAND_FIXED,
    WORKS_LINE_FIXED, WORKS_PATCHED, WORKS_PATCHED_CONVERTED,
)

LINE_CHARS = 190  # a check's line into a pipe (a terminal: its width); the whole reason is under -v and in --json

INDENT = " " * 5  # under a check's PASS/FAIL/WARN
_STYLE = {PASS: ("PASS", "green"), FAIL: ("FAIL", "bold red"), WARN: ("WARN", "yellow")}
_VERDICT_STYLE = {WORKS: "bold green", WORKS_PATCHED: "yellow", NEEDS_CONVERT: "yellow", DEPENDS: "yellow", DEPENDS_VENV: "yellow",
                  WORKS_PATCHED_CONVERTED: "yellow", WORKS_LINE_FIXED: "yellow", WORKS_COMMAND_FIXED: "yellow",
                  DOES_NOT_WORK: "bold red", CANNOT_TELL: "yellow"}


def render(d: dict, console, only_problems: bool = False, detail: bool = False) -> None:
    """The diagnosis: a header, the checks (one line each, or whole with `detail`), the verdict, fixes and launch."""
    from rich.text import Text

    src = d.get("source") or {}
    console.print(Text.assemble(("compat doctor  ", "bold"), f"{d['engine']} {d.get('version') or '?'}",
                                f"  ({src.get('kind')}: {src.get('location')})"))
    t, dr = d["target"], d["drafter"]
    layers = f"{t['num_hidden_layers']} layers" if t["num_hidden_layers"] else "(no num_hidden_layers)"
    console.print(Text(f"  target  {t['path']}  model_type={t['model_type'] or '(none)'} "
                       f"{t['architecture'] or '(no architectures)'} {layers}"))
    method = d.get("method") or {}
    if method.get("family") not in (None, "eagle3") or dr.get("present") is False:
        from compat.methods import get_method

        launched = f"{method['launched']} ({method['from']})" if method.get("launched") else f"from {method.get('from')}"
        resolved = method.get("resolved") or {}
        runs = resolved.get("runs_as")
        shown = runs if runs and runs != (resolved.get("given") or runs) else None  # the release runs it as another name
        console.print(Text(f"  method  {get_method(method['family']).title}: {launched}" + (f", run as {shown}" if shown else "")
                           + (f"  [--platform {method['platform']}]" if method.get("platform") not in (None, "cuda") else "")))
    if dr.get("present") is False:
        console.print(Text("  drafter none (the method takes none)"))
    else:
        console.print(Text(f"  drafter {dr['path']}  {dr['architecture'] or '(no architectures)'} "
                           f"({dr['layout'] or 'unknown'} layout, {plural(dr['tensors'], 'tensor')})"))
    for note in d.get("notes") or []:
        print_hanging(console, Text("  warning: ", style="yellow"), note)
    if d.get("preflight"):
        print_hanging(console, Text("  preflight ", style="bold"), _preflight_line(d["preflight"]))
    console.print()
    shown = [c for c in d["checks"] if not (only_problems and c["verdict"] == PASS)]
    steps = d.get("fix_steps") or []
    if detail:
        for c in shown:
            _render_detail(c, console)
    else:
        width = max((len(c["check"]) for c in shown), default=0)
        for c in shown:
            _render_line(c, steps, width, console)
        if any(c["verdict"] != PASS for c in shown):
            console.print(Text("(the whole reasons: -v; every fact: --json)", style="dim"))
    console.print()
    console.print(Text.assemble(("verdict: ", "bold"), (d["verdict"], _VERDICT_STYLE.get(d["verdict"], "bold"))))
    for question in dict.fromkeys(c["venv_question"]["command"] for c in d["checks"] if c.get("venv_question")):
        console.print(Text("  check the serving venv: ", style="cyan") + Text(question), soft_wrap=True)
    if steps:
        console.print(Text("fix, in this order:", style="bold"))
        for number, step in enumerate(steps, 1):
            _render_step(number, step, d["checks"], console)
    if d.get("instead"):
        console.print(Text("what would work instead:", style="bold"))
        for alternative in d["instead"]:
            console.print(Text(f"  {alternative}"), soft_wrap=True)
    _render_launch(d, bool(steps), console)


def _preflight_line(p: dict) -> str:
    """One line: what the release's own build of the line said, or why it did not run."""
    if not p.get("ran"):
        return f"not run: {p.get('why')}; doctor reads the release's code alone"
    seconds = f", {p['seconds']:.0f} s" if p.get("seconds") else ""
    head = f"{p.get('engine')} {p.get('release')}'s own build of the line on {p.get('platform')} ({p.get('python')}{seconds}): "
    if p.get("ok"):
        return head + "it takes the line"
    error = p.get("error") or {}
    return head + f"{error.get('type')}: {str(error.get('message', '')).splitlines()[0][:200]} ({error.get('site') or '?'})"


def _render_detail(c: dict, console) -> None:
    """One check whole: its title, the reason, where it was read, its own fix (-v / --detail)."""
    from rich.text import Text

    label, style = _STYLE[c["verdict"]]
    print_hanging(console, Text(f"{label} ", style=style), Text(c["title"], style="bold"))
    print_hanging(console, INDENT, c["detail"])
    if c.get("location"):
        print_hanging(console, INDENT, Text(f"at {c['location']}", style="dim"))
    from compat.fix import ConvertFix, typed

    fix = typed(c.get("fix"))  # the check's fix itself (read from JSON only when the diagnosis came as JSON)
    if fix is not None:
        print_hanging(console, Text(INDENT + "fix: ", style="cyan"), fix.shown())
        if isinstance(fix, ConvertFix) and fix.alternative is not None:
            print_hanging(console, Text(INDENT + "or:  ", style="cyan"), fix.alternative.command)


def _render_line(c: dict, steps: list[dict], width: int, console) -> None:
    """`FAIL layer-ids  cannot tell without ... (fix 1; vllm/model_executor/models/llama.py:569)`: one line."""
    from rich.text import Text

    label, style = _STYLE[c["verdict"]]
    head = f"{label} {c['check']:<{width}}  "
    fix = _fix_reference(c, steps)
    where = [fix] if fix else []
    where += [c["location"]] if c.get("location") and c["verdict"] != PASS else []
    tail = f"  ({'; '.join(where)})" if where else ""
    room = _line_room(console) - len(head) - len(tail)
    if room < 30 and tail:  # a narrow terminal: the fact first, its source left to -v
        tail, room = "", _line_room(console) - len(head)
    console.print(Text.assemble((head[:5], style), head[5:], headline(c, max(room, 20)), (tail, "dim")),
                  soft_wrap=True)


def _line_room(console) -> int:
    return LINE_CHARS if console.soft_wrap else max(40, min(LINE_CHARS, console.width - 1))


def headline(c: dict, room: int) -> str:
    """The fact a check found, in `room` characters: its reason up to the first clause break, and a count when it
    lists several findings (`issues`); cut at a word, with an ellipsis, when it is longer (the whole under -v)."""
    text = " ".join(str(c.get("detail") or c.get("title") or "").split())
    cuts = [i for i in (text.find(mark, 20) for mark in (": ", "; ", ". ", " (")) if i > 0]
    first = text[:min(cuts)] if cuts else text
    findings = c.get("issues")
    if isinstance(findings, list) and len(findings) > 1:
        first = f"{len(findings)} found; {first}"
    if first != text and len(first) + 4 <= room:
        first += " ..."
    if len(first) > room:
        first = first[:room - 4].rsplit(" ", 1)[0] + " ..."
    return first


def _fix_reference(c: dict, steps: list[dict]) -> str:
    """Where the check's fix is: `fix 2` (its step in the ordered fixes), or the fix itself when short."""
    from compat.fix import PatchFix, typed

    fix = typed(c.get("fix"))
    if fix is None or c["verdict"] == PASS:
        return ""
    ids = set(fix.patch_ids if isinstance(fix, PatchFix) else ())
    said = fix.shown()
    for number, step in enumerate(steps, 1):
        if (ids and ids <= set(step.get("patch_ids") or [])) or (said and step.get("command") == said):
            return f"fix {number}"
    if not said:
        return ""
    first = said.split("; ", 1)[0].split(": ", 1)[0]  # "no compat patch or conversion fixes this here"
    return f"fix: {said}" if len(said) <= 80 else f"{first}: -v" if len(first) <= 60 else "fix: -v"


def _render_step(number: int, step: dict, checks: list[dict], console) -> None:
    """One of the ordered fixes; a question as its answers, one a line (what each means, and its own fix)."""
    from rich.text import Text

    from compat.fix import AskFix, typed

    asks = [f for f in (typed(c.get("fix")) for c in checks) if isinstance(f, AskFix)]
    ask = next((f for f in asks if f.text == step["command"] and f.answers), None)
    if ask is None or ask.answers is None:
        console.print(Text(f"  {number}. {step['command']}"), soft_wrap=True)
    else:
        question = step["command"].split(": ", 1)[0]  # "say how the drafter was trained"
        console.print(Text(f"  {number}. {question}, with {ask.flag}:"), soft_wrap=True)
        for answer, what in ask.answers.items():
            trained = f"trained on {what['trained']}: " if what.get("trained") else ""
            then = ("the layers match" if what.get("verdict") == PASS
                    else what.get("fix") or "no conversion fixes it")
            console.print(Text(f"       {answer}: {trained}{then}"), soft_wrap=True)
    if step.get("plugin"):
        console.print(Text(f"     or, changing no engine file: {step['plugin']}", style="dim"), soft_wrap=True)
    if step.get("note"):
        console.print(Text(f"     ({step['note']})", style="dim"), soft_wrap=True)


def _render_launch(d: dict, after_fixes: bool, console) -> None:
    from rich.text import Text

    launch = d["launch"]
    yours = " (your line" + (", fixed" if launch.get("edits") else "") + ")" if launch.get("typed") else ""
    if not launch.get("runnable", True):
        why = ("nothing here makes it work" if d["verdict"] == DOES_NOT_WORK
               else "it depends on the answer above")
        console.print(Text(f"launch{yours}: not shown as runnable ({why}); it would be:", style="bold"))
    else:
        console.print(Text("launch" + yours + (" (after the fixes above):" if after_fixes else ":"), style="bold"))
    console.print(Text("  " + launch["command"]), soft_wrap=True)
    for edit in launch.get("edits") or []:
        console.print(Text(f"     changed: {_edit_words(edit)}", style="dim"), soft_wrap=True)
    if launch["module_argv"] != launch["argv"]:
        console.print(Text("  or: " + shlex.join(launch["module_argv"])), soft_wrap=True)


def _edit_words(edit: dict) -> str:
    if edit["kind"] == "spec":
        what = (f"--speculative-config {edit['key']!r} removed" if edit.get("value") is None
                else f"--speculative-config {edit['key']}={json.dumps(edit['value'])}")
    elif edit["kind"] == "set":
        what = f"{edit['option']} {edit.get('value') if edit.get('value') is not None else ''}".rstrip()
    elif edit["kind"] == "positional":
        what = f"{edit.get('value')} first"
    else:
        return f"removed: {edit['why']}"
    return f"{what} ({edit['why']})"


def group_rows(rows: list[dict]) -> list[dict]:
    """Consecutive releases with the same verdict, fixes and failing checks, as one range."""
    groups: list[dict] = []
    for row in rows:
        key = (row["verdict"], tuple(row.get("fixes") or []), tuple(row.get("failing") or []), row.get("error"))
        if groups and groups[-1]["key"] == key:
            groups[-1]["last"] = row["version"]
        else:
            groups.append({"key": key, "first": row["version"], "last": row["version"], "row": row})
    return [{"releases": g["first"] if g["first"] == g["last"] else f"{g['first']} - {g['last']}", **g["row"]} for g in groups]


def render_table(table: dict, console) -> None:
    """One line per range of releases with the same answer; the fix is shown whole (wrapped, never cut)."""
    from rich.table import Table
    from rich.text import Text

    console.print(Text(f"compat doctor: {table['engine']} {table['releases']}", style="bold"))
    grid = Table(show_edge=False, header_style="bold", box=None, pad_edge=False)
    grid.add_column("releases", no_wrap=True)
    grid.add_column("verdict", no_wrap=True)
    grid.add_column("fix", overflow="fold")
    for group in group_rows(table["rows"]):
        style = _VERDICT_STYLE.get(group["verdict"], "")
        fixes = "; ".join(group.get("fixes") or []) or group.get("error") or "-"
        grid.add_row(group["releases"], Text(group["verdict"], style=style), fixes)
    console.print(grid)
    for note in table.get("notes") or []:
        console.print(Text.assemble(("warning: ", "yellow"), note))
    console.print(Text(f"target  {table['target']}\ndrafter {table['drafter']}"))
    rows = table["rows"]
    pick = next((r for r in rows if r["verdict"] != WORKS), rows[0] if rows else None)
    if pick is not None:
        from compat.hub import model_name

        one = shlex.join(["compat", "doctor", model_name(table["target"]), model_name(table["drafter"]), "--engine", f"{table['engine']}=={pick['version']}"])
        console.print(Text(f"details of one release: {one}"))
