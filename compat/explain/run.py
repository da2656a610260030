"""The input and the release(s) of one `compat explain` run, and what it prints.

One release named (`--engine vllm==X`, the installed engine, `--path`): the text is streamed through once.
The release unknown (`--engine vllm` with none installed here): the text is kept in a spool file (bounded
memory) and read against each candidate: the releases it names, else the newest cached ones.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from compat.core.output import plural
from compat.core.errors import RefusedError, SourceError, UsageError
from compat.explain import Explanation, explain
from compat.explain.text import Line, from_stream, from_text
from compat.release_ref import ReleaseRef

SPOOL_MEMORY = 4 << 20


@dataclass
class Result:
    chosen: Explanation | None
    searched: list[dict] = field(default_factory=list)  # every release tried: version, fits, findings
    guessed: bool = False
    input_name: str = ""
    named: bool = False  # the releases searched are the ones the text names (else: every release compat covers)
    named_by: list[dict] = field(default_factory=list)  # no --engine: where the text names the release read

    @property
    def recognised(self) -> bool:
        return self.chosen is not None and self.chosen.recognised

    def to_json(self) -> dict[str, Any]:
        doc = self.chosen.to_json() if self.chosen is not None else {"findings": []}
        return {**doc, "recognised": self.recognised, "input": self.input_name, "release_guessed": self.guessed,
                "releases_searched": self.searched, "release_named_by_text": self.named_by}


def _lines(args) -> tuple[Iterator[Line], str]:
    if args.log and args.log != "-":
        try:
            handle = open(args.log, "rb")
        except FileNotFoundError:  # a path that names nothing: 2; one that is not a readable file: 4
            raise UsageError(f"--log {args.log}: no such file", hint="give the engine's log file, or - for standard input") from None
        except IsADirectoryError:
            raise RefusedError(f"--log {args.log}: a directory, not a log file",
                               hint=f"give the log file in it (e.g. {os.path.join(args.log, 'server.log')}), or - for standard input") from None
        except OSError as err:
            raise RefusedError(f"cannot read --log {args.log}: {err.strerror}") from None
        return from_stream(handle, args.log), args.log
    if args.log == "-" or args.text in ([], ["-"]):
        return from_stream(sys.stdin.buffer, "standard input"), "standard input"
    if len(args.text) == 1 and "\n" not in args.text[0] and os.path.isfile(os.path.expanduser(args.text[0])):
        path = os.path.expanduser(args.text[0])  # `compat explain server.log`: a file is read as the log it is
        try:
            return from_stream(open(path, "rb"), path), path
        except OSError as err:
            raise UsageError(f"cannot read {path}: {err.strerror}") from None
    return from_text(" ".join(args.text)), "the text given"


def _release(args, tree) -> ReleaseRef:
    """The release read, as the fixes name it again (with the serving venv the user named, beside a release)."""
    return ReleaseRef.of_tree(tree, args.python.path if args.python else None)


def explain_input(args, open_source, *, progress: bool) -> Result:
    """`open_source(args, python=, progress=)` opens the tree the source options name (compat/commands/_source.py)."""
    from compat.sources import parse_engine_spec

    lines, name = _lines(args)
    spec = parse_engine_spec(args.engine) if args.engine else None
    if spec is None or args.path:
        if args.path:
            tree = open_source(args, python=args.python, progress=progress)
            found = explain(lines, tree, _release(args, tree), *_later(args, tree, progress))
            return Result(found, [_searched(found)], input_name=name)
        # a paste or a log: the release its text names (an engine's banner, a wheel, an image tag); else NAME_THE_RELEASE
        return _named_by_text(args, lines, name, progress)
    if spec.released or args.python:
        tree = open_source(args, python=args.python, progress=progress)
        found = explain(lines, tree, _release(args, tree), *_later(args, tree, progress))
        return Result(found, [_searched(found)], input_name=name)
    try:
        tree = open_source(args, python=None, progress=progress)
    except SourceError:
        return _guess(args, lines, name, spec.engine, progress)
    found = explain(lines, tree, _release(args, tree), *_later(args, tree, progress))
    return Result(found, [_searched(found)], input_name=name)


def _later(args, tree, progress: bool) -> tuple:
    """The releases after the tree's (to say from which one a check lets the input pass), and how to read them (a
    release fetched says so, as the first did: a cold run across releases is never silent)."""
    from compat.explain.every_release import later_releases

    return later_releases(tree.engine, tree.version, args.cache_dir, args.offline, progress)


def _searched(found: Explanation) -> dict:
    return {"version": found.version, "fits": found.fits, "findings": len(found.findings),
            "traceback_frames": {"checked": found.frames_checked, "fit": found.frames_fitting}}


NAME_THE_RELEASE = ("name the release that produced the text: --engine vllm==0.32.0, --engine vllm (installed, or "
                    "guessed from the text), --engine sglang==0.5.9 or --path DIR")


@contextlib.contextmanager
def _spooled(lines: Iterator[Line]) -> Iterator[Callable[[], Iterator[Line]]]:
    """The text kept in a spool file (bounded memory), to be read again from its start as often as needed."""
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY, mode="w+", encoding="utf-8") as spool:
        for line in lines:
            spool.write(line.text.replace("\n", " ") + "\n")

        def replay() -> Iterator[Line]:
            spool.seek(0)
            for number, text in enumerate(spool, 1):
                yield Line(number, text.rstrip("\n"))

        yield replay


def _named_by_text(args, lines: Iterator[Line], name: str, progress: bool) -> Result:
    """No --engine: a paste whose text names its release (`vLLM API server version 0.11.0`, a wheel, an image tag) is
    read against that release, and says so; several named: the one that fits best."""
    from compat.explain.named_release import frames_of, named_releases
    from compat.sources import open_tree

    with _spooled(lines) as replay:
        named = named_releases(replay())
        engines_named = sorted({n.engine for n in named}, key=lambda e: (-frames_of(replay(), e), -sum(
            1 for n in named if n.engine == e)))
        if not engines_named:
            raise UsageError(NAME_THE_RELEASE, hint="the text names no release either (no engine banner, version, wheel "
                             "or image tag in it)")
        if len(engines_named) > 1 and frames_of(replay(), engines_named[0]) == frames_of(replay(), engines_named[1]):
            said = "; ".join(f"{n.engine} {n.version} ({n.describe()})" for n in named)
            raise UsageError(f"the text names releases of more than one engine: {said}",
                             hint=f"name the one that produced it: --engine {named[0].engine}=={named[0].version}")
        engine = engines_named[0]
        by = [n for n in named if n.engine == engine]
        if len(by) == 1:
            tree = open_tree(f"{engine}=={by[0].version}", cache_dir=args.cache_dir, offline=args.offline,
                             progress=progress)
            found = explain(replay(), tree, ReleaseRef.released(engine, by[0].version), *_later(args, tree, progress))
            return Result(found, [_searched(found)], input_name=name, named_by=[n.to_json() for n in by])
        result = _search(args, replay, name, engine, [n.version for n in by], progress)
    result.named_by = [n.to_json() for n in by]
    return result


def _guess(args, lines: Iterator[Line], name: str, engine: str, progress: bool) -> Result:
    """No release named and none installed: the releases the text names, else every release compat covers, each
    read against the text; explained against the one that fits best, each finding with the releases that raise it."""
    from compat import engines

    with _spooled(lines) as replay:
        named: list[str] = []
        said = engines.get(engine).version_in_log_pattern  # how the engine's log names its release
        for line in replay():
            for match in said.finditer(line.text):
                if match.group(1) not in named:
                    named.append(match.group(1))
        return _search(args, replay, name, engine, named, progress)


def _search(args, replay: Callable[[], Iterator[Line]], name: str, engine: str, named: list[str],
            progress: bool) -> Result:
    """The text read against each candidate release (the ones `named`, else every release compat covers), explained
    against the one that fits best, each finding with the releases that raise it."""
    from compat.core.console import heartbeat
    from compat.explain.every_release import best, raised_in, read_release, versions_to_search
    from compat.sources import open_tree

    candidates = named or versions_to_search(engine, args.cache_dir, args.offline)
    if not candidates:
        raise SourceError(f"no {engine} is installed here, the text names no {engine} release, and none is cached",
                          hint=f"name the release: --engine {engine}==VERSION")
    readings: list = []
    searched: list[dict] = []
    for version in candidates:
        try:
            tree = open_tree(f"{engine}=={version}", cache_dir=args.cache_dir, offline=args.offline, progress=progress)
            with heartbeat("explain", progress) as beat:
                beat.state = f"reading the text against {engine} {version}"
                reading = read_release(tree, replay)
        except SourceError as err:
            searched.append({"version": version, "fits": None, "error": err.message})
            continue
        readings.append(reading)
        searched.append({"version": reading.version, "fits": reading.fits, "findings": reading.errors})
    if not readings:
        raise SourceError(f"none of the releases tried could be had: {', '.join(candidates)}",
                          hint=f"name one that can: --engine {engine}==VERSION (without --offline to fetch it)")
    chosen = best(readings)
    found = explain(replay(), chosen.tree, ReleaseRef.released(engine, chosen.version), *_later(args, chosen.tree, progress))
    for finding in found.findings:
        finding["raised_in"] = raised_in(finding, readings)
    return Result(found, searched, guessed=True, input_name=name, named=bool(named))


# -- what people read --------------------------------------------------------------------------------------------
def render(result: Result, console) -> None:
    from rich.markup import escape
    from rich.text import Text

    from compat.core.console import print_hanging

    found = result.chosen
    assert found is not None
    where = found.source.get("location") or ""
    console.print(f"[bold]compat explain[/]: {escape(result.input_name)} ({plural(found.lines, 'line')}) against "
                  f"{found.engine} {found.version or '?'} ({escape(str(where))})")
    if result.named_by:
        said = "; ".join(f"{n['engine']} {n['version']} (line {n['line']}: `{escape(n['said'])}`)" for n in result.named_by)
        console.print(f"no --engine given: the text names {said}" + ("" if len(result.named_by) == 1 else
                      f"; explained against {found.version}, the one it fits best"))
    elif result.guessed and result.named:
        console.print(f"the release was not named: tried the ones the text names: "
                      + "; ".join(_fit_text(s) for s in result.searched))
    elif result.guessed:
        had = [s["version"] for s in result.searched if not s.get("error")]
        missing = [s["version"] for s in result.searched if s.get("error")]
        fitting = [s["version"] for s in result.searched if s.get("fits")]
        console.print(f"the release was not named: searched every {found.engine} release compat covers that could be "
                      f"had ({len(had)}: {had[-1]} - {had[0]})" + (f"; {len(missing)} could not be had" if missing else "")
                      + (f"; the traceback's frames fit {', '.join(fitting)}" if fitting else "")
                      + f"; explained against {found.version}")
    if not found.findings:
        searched = ", ".join(f"{found.engine} {s['version']}" for s in result.searched)
        console.print(f"\n[yellow]not recognised[/]: nothing in the text matches a raise site, logger call or traceback "
                      f"frame of the speculative-decoding code of {searched}, nor a failure compat knows to be unrelated.")
        if found.searched:
            console.print(f"searched the release for: {escape(', '.join(found.searched))}")
        _render_nearest(found.nearest, console)
        return
    for number, f in enumerate(found.findings, 1):
        console.print()
        style = {"error": "red", "warning": "yellow", "unrelated": "cyan", "acceptance": "magenta"}.get(f["kind"], "")
        count = f" (x{f['count']})" if f.get("count", 1) > 1 else ""
        role = {"failure": " (what the engine stopped on)", "after the failure": " (after the failure)"}.get(f.get("role") or "", "")
        process = f" in {f['process']}" if f.get("process") else ""
        print_hanging(console, Text(f"{number}. ", style="bold"), Text.assemble(
            (f["kind"], f"bold {style}".strip()), (role, "bold"), f"{count}  line {f['line']}{process}: ",
            _cut(f["message"].replace(chr(10), " | "))))
        if f["site"]:
            function = f" in {f['function']}" if f.get("function") else ""
            also = f"; the same message also at {', '.join(f['also_at'])}" if f.get("also_at") else ""
            _field(console, "site   ", f"{f['site']}{function} (located by the {f['located_by']}{also})")
        if f.get("raised_by_user"):
            mine = f["raised_by_user"]
            code = f" (`{mine['code']}`)" if mine.get("code") else ""
            _field(console, "raised ", f"{mine['path']}:{mine['line']} in {mine['function']}{code} (your code)")
        if f.get("raised_in"):
            sites = _raised_where(f["raised_in"]["sites"], result)
            _field(console, "raised by ", f"{found.engine} {f['raised_in']['ranges']}"
                   + (f" ({sites})" if len(f["raised_in"]["sites"]) > 1 else ""))
        if f.get("match"):
            _field(console, "match  ", f"{f['match']['says']}: {_cut(f['match']['template'], 160)}")
        for maybe in f.get("could_be") or ():
            _field(console, "could be ", f"{maybe['site']}: {_cut(maybe['checks'] or '', 200)}")
        for near in f.get("also_fits") or ():
            _field(console, "also fits ", f"{near['site']}: {near['says']}: {_cut(near['template'], 160)}")
        if f.get("during"):
            _field(console, "during ", _cut(f["during"], 200))
        _field(console, "cause  ", f["cause"])
        if f.get("check") and f.get("cause_id"):  # a catalogued cause: what the code checked, besides
            _field(console, "check  ", f["check"]["says"])
        if f["kind"] == "acceptance":
            trend = ", ".join(f"{_first(i)}" for i in f["over_time"][:12])
            _field(console, "over time  ", f"{trend}{' ...' if len(f['over_time']) > 12 else ''}")
        if f["fix"]:
            _field(console, "fix    ", f["fix"]["text"])


def _field(console, label: str, text: str) -> None:
    """`   label  text`: on a terminal what wraps is indented under the text, as doctor's fields are."""
    from rich.text import Text

    from compat.core.console import print_hanging

    name = label.rstrip(" ")
    print_hanging(console, Text.assemble("   ", (name, "cyan"), label[len(name):]), text)


def _render_nearest(nearest: list[dict], console) -> None:
    """Lines that are no template's whole message: the nearest sites, each with how well it matches (not a match)."""
    from rich.markup import escape

    for entry in nearest[:5]:
        console.print(f"\nline {entry['line']} is no message of this release as a whole; nearest (not a match):")
        for near in entry["sites"]:
            console.print(f"   {escape(near['site'])}  {escape(near['says'])}: {escape(_cut(near['template'], 160))}")


def _raised_where(sites: dict[str, list[str]], result: Result) -> str:
    """Where each release raises it, by file: a line that moves with every release is not repeated per release (--json
    keeps each site)."""
    by_file: dict[str, list[str]] = {}
    for site, versions in sites.items():
        by_file.setdefault(site.rpartition(":")[0], []).extend(versions)
    if len(by_file) == len(sites):
        return "; ".join(f"{site} in {_ranges(vs, result)}" for site, vs in sites.items())
    moved = "; ".join(f"{file} in {_ranges(vs, result)}" for file, vs in by_file.items())
    return f"{moved}; the line in each release: --json"


def _ranges(versions: list[str], result: Result) -> str:
    from compat.explain.every_release import ranges
    from packaging.version import Version

    searched = sorted((s["version"] for s in result.searched if not s.get("error")), key=Version)
    return ranges(versions, searched)


def _first(interval: dict) -> str:
    per = interval.get("per_position") or []
    return f"{per[0]:.2f}" if per else f"{interval.get('mean_accepted_length')}"


def _fit_text(searched: dict) -> str:
    if searched.get("error"):
        return f"{searched['version']}: not available ({searched['error']})"
    fits = {True: "fits (every traceback frame shows its code)", False: "does not fit (traceback frames show other code)",
            None: "no traceback frame to compare"}[searched["fits"]]
    return f"{searched['version']}: {fits}, {plural(searched['findings'], 'finding')}"


def _cut(text: str, width: int = 300) -> str:
    return text if len(text) <= width else text[:width] + " ..."
