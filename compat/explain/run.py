"""The input and the release(s) of one `compat explain` run, and what it prints.

One release named (`--engine vllm==X`, the installed engine, `--path`): the text is streamed through once.
The release unknown (`--engine vllm` with none installed here): the text is kept in a spool file (bounded
memory) and read against each candidate: the releases it names, else the newest cached ones.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from compat.core.errors import SourceError, UsageError
from compat.explain import Explanation, explain
from compat.explain.text import Line, from_stream, from_text

MAX_GUESSES = 4  # releases tried when the text names none
SPOOL_MEMORY = 4 << 20


@dataclass
class Result:
    chosen: Explanation | None
    searched: list[dict] = field(default_factory=list)  # every release tried: version, fits, findings
    guessed: bool = False
    input_name: str = ""

    @property
    def recognised(self) -> bool:
        return self.chosen is not None and self.chosen.recognised

    def to_json(self) -> dict[str, Any]:
        doc = self.chosen.to_json() if self.chosen is not None else {"findings": []}
        return {**doc, "recognised": self.recognised, "input": self.input_name, "release_guessed": self.guessed,
                "releases_searched": self.searched}


def _lines(args) -> tuple[Iterator[Line], str]:
    if args.log and args.log != "-":
        try:
            handle = open(args.log, "rb")
        except OSError as err:
            raise UsageError(f"cannot read --log {args.log}: {err.strerror}") from None
        return from_stream(handle, args.log), args.log
    if args.log == "-" or args.text in ([], ["-"]):
        return from_stream(sys.stdin.buffer, "standard input"), "standard input"
    return from_text(" ".join(args.text)), "the text given"


def _source_args(args) -> tuple[str, ...]:
    if args.path:
        return ("--path", args.path)
    out = ("--engine", args.engine) if args.engine else ()
    return out + (("--python", args.python.path) if args.python else ())


def explain_input(args, open_source, *, progress: bool) -> Result:
    """`open_source(args, python=, progress=)` opens the tree the source options name (compat/commands/_source.py)."""
    from compat.sources import parse_engine_spec

    lines, name = _lines(args)
    spec = parse_engine_spec(args.engine) if args.engine else None
    if spec is None or args.path:
        if args.path:
            tree = open_source(args, python=args.python, progress=progress)
            found = explain(lines, tree, _source_args(args))
            return Result(found, [_searched(found)], input_name=name)
        raise UsageError("name the release that produced the text: --engine vllm==0.32.0, --engine vllm (installed, "
                         "or guessed from the text), --engine sglang==0.5.9 or --path DIR")
    if spec.released or args.python:
        tree = open_source(args, python=args.python, progress=progress)
        found = explain(lines, tree, _source_args(args))
        return Result(found, [_searched(found)], input_name=name)
    try:
        tree = open_source(args, python=None, progress=progress)
    except SourceError:
        return _guess(args, lines, name, spec.engine, progress)
    found = explain(lines, tree, _source_args(args))
    return Result(found, [_searched(found)], input_name=name)


def _searched(found: Explanation) -> dict:
    return {"version": found.version, "fits": found.fits, "findings": len(found.findings),
            "traceback_frames": {"checked": found.frames_checked, "fit": found.frames_fitting}}


def _guess(args, lines: Iterator[Line], name: str, engine: str, progress: bool) -> Result:
    """No release named and none installed: try the releases the text suggests and say which fit."""
    from compat.sources import open_tree
    from compat.sources.cache import cache_root, cached_versions

    with tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY, mode="w+", encoding="utf-8") as spool:
        for line in lines:
            spool.write(line.text.replace("\n", " ") + "\n")

        def replay() -> Iterator[Line]:
            spool.seek(0)
            for number, text in enumerate(spool, 1):
                yield Line(number, text.rstrip("\n"))

        named: list[str] = []
        from compat import engines

        said = engines.get(engine).version_in_log_pattern  # how the engine's log names its release
        for line in replay():
            for match in said.finditer(line.text):
                if match.group(1) not in named:
                    named.append(match.group(1))
        candidates = named or list(reversed(cached_versions(cache_root(args.cache_dir), engine)))[:MAX_GUESSES]
        if not candidates:
            raise SourceError(f"no {engine} is installed here, the text names no {engine} release, and none is cached",
                              hint=f"name the release: --engine {engine}==VERSION")
        tried: list[Explanation] = []
        searched: list[dict] = []
        for version in candidates:
            try:
                tree = open_tree(f"{engine}=={version}", cache_dir=args.cache_dir, offline=args.offline, progress=progress)
            except SourceError as err:
                searched.append({"version": version, "fits": None, "error": err.message})
                continue
            found = explain(replay(), tree, ("--engine", f"{engine}=={version}"))
            tried.append(found)
            searched.append(_searched(found))
    if not tried:
        raise SourceError(f"none of the releases tried could be had: {', '.join(candidates)}",
                          hint=f"name one that can: --engine {engine}==VERSION (without --offline to fetch it)")
    # the best fit: every traceback frame's code is this release's, then the most recognised
    best = max(tried, key=lambda e: (e.fits is True, e.fits is not False, len(e.findings)))
    return Result(best, searched, guessed=True, input_name=name)


# -- what people read --------------------------------------------------------------------------------------------
def render(result: Result, console) -> None:
    from rich.markup import escape

    found = result.chosen
    assert found is not None
    where = found.source.get("location") or ""
    console.print(f"[bold]compat explain[/]: {escape(result.input_name)} ({found.lines} lines) against "
                  f"{found.engine} {found.version or '?'} ({escape(str(where))})")
    if result.guessed:
        console.print(f"the release was not named: tried {len(result.searched)} "
                      + "; ".join(_fit_text(s) for s in result.searched))
    if not found.findings:
        searched = ", ".join(f"{found.engine} {s['version']}" for s in result.searched)
        console.print(f"\n[yellow]not recognised[/]: nothing in the text matches a raise site, logger call or traceback "
                      f"frame of the speculative-decoding code of {searched}, nor a failure compat knows to be unrelated.")
        return
    for number, f in enumerate(found.findings, 1):
        console.print()
        style = {"error": "red", "warning": "yellow", "unrelated": "cyan", "acceptance": "magenta"}.get(f["kind"], "")
        count = f" (x{f['count']})" if f.get("count", 1) > 1 else ""
        console.print(f"[bold]{number}. [{style}]{f['kind']}[/][/]{count}  line {f['line']}: {escape(_cut(f['message'].replace(chr(10), ' | ')))}")
        if f["site"]:
            function = f" in {f['function']}" if f.get("function") else ""
            also = f"; the same message also at {', '.join(f['also_at'])}" if f.get("also_at") else ""
            console.print(f"   [cyan]site[/]   {escape(f['site'])}{escape(function)} (located by the {f['located_by']}{also})")
        console.print(f"   [cyan]cause[/]  {escape(f['cause'])}")
        if f["kind"] == "acceptance":
            trend = ", ".join(f"{_first(i)}" for i in f["over_time"][:12])
            console.print(f"   [cyan]over time[/]  {escape(trend)}{' ...' if len(f['over_time']) > 12 else ''}")
        if f["fix"]:
            console.print(f"   [cyan]fix[/]    {escape(f['fix']['text'])}")


def _first(interval: dict) -> str:
    per = interval.get("per_position") or []
    return f"{per[0]:.2f}" if per else f"{interval.get('mean_accepted_length')}"


def _fit_text(searched: dict) -> str:
    if searched.get("error"):
        return f"{searched['version']}: not available ({searched['error']})"
    fits = {True: "fits (every traceback frame shows its code)", False: "does not fit (traceback frames show other code)",
            None: "no traceback frame to compare"}[searched["fits"]]
    return f"{searched['version']}: {fits}, {searched['findings']} findings"


def _cut(text: str, width: int = 300) -> str:
    return text if len(text) <= width else text[:width] + " ..."
