"""The `compat ...` examples that carry no output: in the pages' fenced blocks (outside the examples
tools/readme_examples.py re-renders) and in every command's --help. Each runs as written in the folder `compat
samples .` writes, or says what the user must bring (issue 40: a newcomer pasted them and met names no sample has,
flags that moved, quoting that broke):

- in --help, under the heading `examples with what you bring (...)` (compat/core/output.py: examples_yours); the
  others are under EXAMPLES_HERE, and an example under neither is a problem;
- on a page, after a `<!-- yours: WHAT -->` line right before its block.

Every example is read by compat's own parser (compat.cli.parse: an unknown flag, a bad value, broken quoting). The
others run in the samples folder (bash, pipes and all, at a pipe's width): exit 0 or 1 (a check failing is an
answer), never a traceback. Not run, only read: those that read a range of releases or the index's listing (slow:
`--all` runs them), and those that change the user's cache (`cache clean` without --dry-run). A release an example
pins that is not in the cache is skipped with --offline.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
YOURS = re.compile(r"^<!-- yours: (?P<what>.+?) -->\s*$")
EXAMPLE = re.compile(r"^<!-- example: ")
DESCRIBED = re.compile(r"\s{2,}")  # a --help example, then its description after two spaces or more


@dataclass(frozen=True)
class Command:
    where: str  # "docs/manifests.md:9" or "compat doctor --help"
    text: str  # as written (continuation lines joined)
    yours: str | None  # what the user must bring, when the example says so


def _joined(lines: list[str]) -> list[str]:
    """Lines with a trailing backslash joined to the next (a command written over several lines)."""
    out: list[str] = []
    for line in lines:
        if out and out[-1].endswith("\\"):
            out[-1] = out[-1][:-1].rstrip() + " " + line.strip()
        else:
            out.append(line)
    return out


def page_commands(page: Path) -> list[Command]:
    """The unrendered `compat` lines of a page's fenced blocks (a rendered example's block is skipped)."""
    lines = page.read_text().split("\n")
    found: list[Command] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        fence = lines[i][3:].strip()
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        before = lines[i - 1] if i else ""
        if not EXAMPLE.match(before):
            yours = YOURS.match(before)
            for number, line in enumerate(_joined(lines[i + 1:end])):
                command = line[2:] if line.startswith("$ compat ") else line if fence != "text" else ""
                if command.startswith("compat "):
                    shown = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
                    found.append(Command(f"{shown}:{i + 2 + number}", command,
                                         yours["what"] if yours else None))
        i = end + 1
    return found


def help_commands() -> list[Command]:
    """Every command's --help examples (and its subcommands'), each with its section."""
    import argparse

    from compat.cli import command_parser
    from compat.commands import command_names
    from compat.core.output import EXAMPLES_HERE

    found: list[Command] = []
    for name in command_names():
        parser = command_parser(name)
        parsers = [(name, parser)] + [(f"{name} {sub}", p) for action in parser._actions  # noqa: SLF001
                                      if isinstance(action, argparse._SubParsersAction)  # noqa: SLF001
                                      for sub, p in action.choices.items()]
        for label, each in parsers:
            section: str | None = None
            for line in _joined((each.epilog or "").split("\n")):
                if line and not line.startswith(" "):
                    section = "here" if line == EXAMPLES_HERE else (
                        line[line.index("(") + 1:line.rindex(")")] if line.startswith("examples with what you bring") else None)
                if line.startswith("  compat "):
                    text = DESCRIBED.split(line.strip(), maxsplit=1)[0]
                    yours = None if section == "here" else section or "UNDER NO HEADING"
                    found.append(Command(f"compat {label} --help", text, yours))
    return found


def compat_argvs(text: str) -> list[list[str]]:
    """The argv of each `compat` of a command line (`compat probe ... | grep x`, `... > file`, `# comment` dropped)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    words, segments = list(lexer), [[]]
    for word in words:
        if word and set(word) <= set("|&;<>"):
            segments.append([])
        else:
            segments[-1].append(word)
    return [seg[1:] for seg in segments if seg[:1] == ["compat"]]


def read(argv: list[str]):
    """compat's own parser on argv: (namespace, None) or (None, its message)."""
    from compat.cli import UsageProblem, parse

    try:
        return parse(argv), None
    except UsageProblem as problem:
        return None, f"{problem.parser.prog}: {problem.message}"
    except SystemExit:
        return None, "it only prints help"


def slow_or_yours(args) -> str | None:
    """Why a runnable example is only read: a range of releases, the index's listing, or the user's cache changed."""
    from compat.sources import parse_engine_spec
    from compat.sources.cache import plain_pin

    if args.command == "matrix" or getattr(args, "releases", None):
        return "a range of releases"
    engine = getattr(args, "engine", None)
    spec = parse_engine_spec(engine) if isinstance(engine, str) else None
    if spec is not None and spec.specifier is not None and plain_pin(spec.specifier) is None:
        return "the index's listing"
    if spec is not None and spec.specifier is None and args.command == "explain" and not args.path:
        return "every release compat covers"
    if args.command == "cache" and args.action == "clean" and not args.dry_run:
        return "it changes your cache"
    return None


def pins(args) -> list[str]:
    """The releases an example pins (`vllm==0.16.0`): skipped with --offline when they are not cached."""
    engine = getattr(args, "engine", None)
    return [engine] if isinstance(engine, str) and re.fullmatch(r"\w+==\d[\w.]*", engine) else []


def check_commands(pages: list[Path], *, offline: bool, run_slow: bool) -> int:
    sys.path.insert(0, str(ROOT / "tools"))
    from readme_examples import build_fixtures, cached, pipe_env

    commands = [c for page in pages for c in page_commands(page)] + help_commands()
    problems: list[str] = []
    ran: list[str] = []
    read_only: list[str] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="compat-commands-") as tmp:
        work = Path(tmp)
        build_fixtures(work, "Kimi-K2.5 " + " ".join(c.text for c in commands), offline)
        for command in commands:
            if command.yours == "UNDER NO HEADING":
                problems.append(f"{command.where}: `{command.text}` is under neither heading (compat/core/output.py)")
                continue
            parsed = []
            for argv in compat_argvs(command.text):
                args, problem = read(argv)
                if problem:
                    problems.append(f"{command.where}: `{command.text}`: {problem}")
                parsed.append(args)
            if command.yours or None in parsed or not parsed:
                continue
            why = next((w for w in map(slow_or_yours, parsed) if w), None)
            if why and (not run_slow or why == "it changes your cache"):
                read_only.append(f"{command.text} ({why})")
                continue
            missing = [p for args in parsed for p in pins(args) if not cached(p)]
            if offline and missing:
                skipped.append(f"{command.text} (not cached: {', '.join(missing)})")
                continue
            started = time.monotonic()
            proc = subprocess.run(["bash", "-c", "set -o pipefail; " + command.text], cwd=work, env=pipe_env(),
                                  capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
            ran.append(f"{time.monotonic() - started:5.1f} s  {command.text}")
            said = proc.stdout + proc.stderr
            if proc.returncode not in (0, 1) or "Traceback (most recent call last)" in said:
                problems.append(f"{command.where}: `{command.text}` exited {proc.returncode}: {said.strip()[-600:]}")
    print(f"commands: {len(commands)}; ran {len(ran)}; read only {len(read_only)}; skipped {len(skipped)}"
          + "".join(f"\n  ran {r}" for r in ran) + "".join(f"\n  read only: {r}" for r in read_only)
          + "".join(f"\n  skipped: {s}" for s in skipped))
    for problem in problems:
        print(f"PROBLEM {problem}")
    return 1 if problems else 0
