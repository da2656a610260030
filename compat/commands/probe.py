"""`compat probe`: how an engine release does EAGLE-3, read statically from its own source."""

from __future__ import annotations

import sys

from compat.core.output import EXAMPLES_HERE, EXIT_CODES, add_json_argument, examples_yours
from compat.commands._source import add_source_arguments

TYPE_CHECKING = False  # typing costs milliseconds to import at start-up; mypy reads this as True
if TYPE_CHECKING:
    from compat.core.tree import EngineTree

NAME = "probe"
ORDER = 10
FLEET = True  # --host/--hosts/--ray (compat/fleet/)
SUMMARY = "what an engine release supports for EAGLE-3, read from its own source"
DESCRIPTION = (
    "Read a vLLM or SGLang release's source (installed, released or a tree) statically and report, with file "
    "and line, how it does speculative decoding: every method it accepts (EAGLE-3, DFlash, DSpark, MTP, draft models, "
    "n-gram, ...; --methods: family by family), SpeculativeConfig's fields, the EAGLE-3 target gate and which target "
    "classes can feed a drafter, registered drafter architectures, how aux layer ids are read, and the speculative "
    "CLI flags. No GPU, no engine import."
)
EPILOG = EXAMPLES_HERE + """
  compat probe                                  which engines are installed here
  compat probe --engine vllm==0.11.0            a release, fetched from the package index (cached): the summary
  compat probe --engine vllm==0.11.0 --full     ... then every fact, with its file and line
  compat probe --engine sglang==0.5.23 --methods    every method, family by family (names, aliases, drafters)
  compat probe --engine 'sglang>=0.5.8,<0.6'    the newest release in a range
  compat probe --engine vllm==latest --json     for CI

""" + examples_yours("an installed engine, a serving venv, a source tree") + """
  compat probe --engine vllm                    the vLLM installed in this interpreter
  compat probe --engine vllm --python ./venv-serve/bin/python   ... in the serving venv
  compat probe --path ./vllm-checkout           a source tree (checkout, unpacked or patched copy)

""" + EXIT_CODES


def add_arguments(parser) -> None:
    add_source_arguments(parser)
    add_json_argument(parser, "print the report as JSON (stable keys, for CI)")
    parser.add_argument("--full", action="store_true", help="after the summary, every fact with its file and line "
                        "(the default prints the one-screen summary only)")
    parser.add_argument("--methods", action="store_true", help="after the summary, every speculative method the release "
                        "accepts, family by family: its names, what runs it, the drafter classes, the layer-id reader "
                        "(keys and offsets), the block keys and what the serving venv needs, each with its file and line")


def run(args, console) -> int:
    from compat.core.output import print_json
    from compat.commands._source import tree_from_args
    from compat.core.errors import EXIT_OK

    if not args.engine and not args.path:
        return _list_installed(args, console)
    from compat.report import build_report, render

    from compat.core.console import show_progress

    tree = _answered_release(args) or tree_from_args(args, progress=show_progress(args))
    report = build_report(tree)
    if args.json:
        print_json(report, "probe")
        return EXIT_OK
    from compat.report_summary import render_summary

    again = "compat probe " + " ".join(_source_words(args))
    render_summary(report, console, full_hint=None if args.full else f"every fact with its file and line: {again} --full; "
                   f"as JSON: {again} --json")
    if args.methods:
        from compat.method_table import render_methods

        console.print()
        render_methods(report, console)
    if args.full:
        console.print()
        # a fact with no value (compat_plugin when no plugin is installed) is not a section of its own
        render({k: v for k, v in report.items() if v is not None}, console)
    return EXIT_OK


def _answered_release(args) -> EngineTree | None:
    """A cached release pinned to its numbers (`--engine vllm==0.32.0`, as CI names one) whose probe report the facts
    cache holds, opened as it is; None otherwise (tree_from_args then opens the source, fetching or checking it).

    The answers are read from the facts cache and none of the release's files, so the files are not checked against
    the release's manifest here (a stat each, 2,600 for vLLM: a third of a warm probe); every other command that opens
    a release, and a probe whose facts are not cached, checks it first and fetches a damaged release again."""
    if not args.engine or args.path or args.python:
        return None
    from compat import facts
    from compat.sources import parse_engine_spec
    from compat.sources.cache import cache_root, cached_release, plain_pin

    spec = parse_engine_spec(args.engine)
    pinned = plain_pin(spec.specifier)  # the cache's folder names decide it: no listing, no packaging
    if pinned is None or not facts.enabled():
        return None
    hit = cached_release(cache_root(args.cache_dir), spec.engine, pinned)
    if hit is None:
        return None
    tree = hit.tree(cached=True)
    return tree if facts.report_cached(tree) else None


def _source_words(args) -> list[str]:
    import shlex

    words = []
    for flag, value in (("--engine", args.engine), ("--path", args.path), ("--python", args.python)):
        if value:
            words += [flag, shlex.quote(str(value))]
    return words


def _list_installed(args, console) -> int:
    from compat.core.output import print_json
    from compat.core.errors import EXIT_OK
    from compat.sources import find_installed

    engines = find_installed(args.python)
    if args.json:
        print_json({"installed": [e.__dict__ for e in engines]}, "installed")
        return EXIT_OK
    where = args.python or sys.executable
    if not engines:
        console.print(f"No vLLM or SGLang is installed in {where}.")
        console.print("Probe a release instead (fetched once from the package index, then cached):")
        console.print("  compat probe --engine vllm==0.11.0\n  compat probe --engine sglang==latest")
        console.print("or the serving venv: compat probe --engine vllm --python /path/to/venv/bin/python")
        return EXIT_OK
    console.print(f"Installed in {where}:")
    for e in engines:
        console.print(f"  {e.engine} {e.version}  (distribution {e.distribution}, {e.root})")
    console.print("\nProbe one: compat probe --engine " + engines[0].engine + (f" --python {args.python}" if args.python else ""))
    return EXIT_OK
