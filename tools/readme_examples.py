#!/usr/bin/env python3
"""Run the examples of the README and docs/ and write what the commands really print into them (`--check`: compare).

An example is a fenced block right after a marker line:

    <!-- example: NAME needs=vllm==0.17.1,vllm==0.18.0 -->
    ```text
    $ compat patch --path demo --dry-run | head -20
    ...what it prints...
    $ compat patch --path demo
    ...
    ```

Each `$ ` line is run by bash (pipes and all, `set -o pipefail`) in a temporary directory holding the
fixtures below, stdout and stderr together (stderr's progress lines left out: they come as fast as the machine
goes), at the width a pipe gets (no COLUMNS: nothing wraps) and with no colour; the lines after it, up to the next
`$ ` line, are its output. Paths are normalised: the temporary directory is shown as `~/work`
(`~/work/demo`, not `/tmp/compat-readme-x/demo`) and the home directory as `~`. `needs=` names the engine releases the example reads; with
`--offline` an example whose releases are not in the user cache is skipped (and `network` marks one that
always needs the package index, like `--releases`), so the test of this script needs no network.

Fixtures (built only when an example's commands name them):
    Kimi-K2.5/ ...      what `compat samples DIR` writes (compat/samples.py: every sample)
    cache/              a release cache holding vLLM 0.11.0's source (a copy, without its facts; the page's own
                        first command, `compat probe --engine vllm==0.11.0 --cache-dir cache -qq`, fetches it)
A page makes what else its examples use with commands a reader runs too (patch.md copies a release into demo/).

Every other `compat ...` example, in a fenced block of a page or in a command's --help (--commands), runs as written
in the samples folder or says what the user must bring: in --help, under the heading `examples with what you bring
(...)` (compat/core/output.py: examples_yours); on a page, after a `<!-- yours: WHAT -->` line before its block.
Each is read by compat's own parser (an unknown flag, broken quoting); each of the others runs (exit 0 or 1, no
traceback) unless it reads a range of releases or the index's listing (read only: --all runs them too) or changes
the user's cache (`cache clean` without --dry-run: read only).

    python tools/readme_examples.py             rewrite the examples of README.md and docs/*.md
    python tools/readme_examples.py --check     exit 1 (with a diff) when a page differs from the commands
    python tools/readme_examples.py docs/doctor.md --only seed-unknown    one page, one example
    python tools/readme_examples.py --commands [--offline] [--all]        every other example, as written
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- example: (?P<name>[\w.-]+)(?P<options>[^>]*)-->\s*$")
FENCE = "```"
WORK = "~/work"  # what the temporary directory is shown as: a user's working directory
# Progress on stderr (compat/core/console.py, compat/sources/progress.py): when and how often it comes depends on the
# machine's speed and load, so it is left out of what the pages show (it never goes to stdout).
PROGRESS = re.compile(r"^(?:\w+: .*(?:, \d+ s|: \d+ to do|done, \d+ in \d+ s)|fetching .*|waiting: .*)\n?$")


@dataclass
class Example:
    name: str
    needs: list[str]
    network: bool
    start: int  # index of the first line inside the fence
    end: int  # index of the closing fence
    commands: list[str]
    output: list[list[str]] = field(default_factory=list)


def parse(lines: list[str], page: str = "README.md") -> list[Example]:
    examples = []
    for i, line in enumerate(lines):
        match = MARKER.match(line)
        if not match:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith(FENCE):
            raise SystemExit(f"{page} line {i + 1}: example {match['name']} is not followed by a ``` block")
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith(FENCE))
        options = match["options"].split()
        needs = [n for o in options if o.startswith("needs=") for n in o[len("needs="):].split(",") if n]
        body = lines[i + 2:end]
        commands, output = [], []
        for text in body:
            if text.startswith("$ "):
                commands.append(text[2:])
                output.append([])
            elif output:
                output[-1].append(text)
        if not commands:
            raise SystemExit(f"{page} line {i + 1}: example {match['name']} has no `$ ` command")
        examples.append(Example(match["name"], needs, "network" in options, i + 2, end, commands, output))
    return examples


def cached(spec: str) -> bool:
    from compat.sources.cache import cache_root, cached_release, plain_pin

    engine, _, version = spec.partition("==")
    return cached_release(cache_root(), engine, plain_pin("==" + version) or version) is not None


def release_tree(spec: str, offline: bool) -> Path:
    from compat.sources.released import fetch_release

    engine, _, version = spec.partition("==")
    return fetch_release(engine, f"=={version}", offline=offline, progress=False).root


def build_fixtures(work: Path, commands: str, offline: bool) -> None:
    from compat.samples import SAMPLES, write_samples

    if any(sample.name in commands for sample in SAMPLES):  # what `compat samples DIR` writes, as a user gets it
        write_samples(work)
    if "--cache-dir cache" in commands:
        shutil.rmtree(work / "cache", ignore_errors=True)
        source = release_tree("vllm==0.11.0", offline)
        dest = work / "cache" / "releases" / "vllm" / "0.11.0"
        shutil.copytree(source / "vllm", dest / "vllm")
        for name in ("release.json", "manifest.json"):  # the record names the manifest: without it the copy reads as damaged
            if (source / name).exists():
                shutil.copy2(source / name, dest / name)


def normalise(text: str, work: Path) -> list[str]:
    home = str(Path.home())
    for real in {str(work), os.path.realpath(work)}:
        text = text.replace(real, WORK)
    text = text.replace(home + "/", "~/")
    return [line.rstrip() for line in text.rstrip("\n").split("\n")] if text.strip() else []


def run_example(example: Example, offline: bool) -> list[list[str]]:
    with tempfile.TemporaryDirectory(prefix="compat-readme-") as tmp:
        work = Path(tmp)
        build_fixtures(work, "\n".join(example.commands), offline)
        env = pipe_env()
        outputs = []
        for command in example.commands:
            proc = subprocess.run(["bash", "-c", "set -o pipefail; " + command], cwd=work, env=env, capture_output=True,
                                  text=True, timeout=900)
            text = proc.stdout + "".join(line for line in proc.stderr.splitlines(keepends=True) if not PROGRESS.match(line))
            if "Traceback (most recent call last)" in text:
                raise SystemExit(f"example {example.name}: `{command}` printed a traceback:\n{text}")
            outputs.append(normalise(text, work))
        return outputs


def pipe_env() -> dict[str, str]:
    """A user's shell whose output goes into a pipe: no COLUMNS (nothing wraps), no colour, compat on PATH."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONWARNINGS": "ignore",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for name in ("FORCE_COLOR", "COLUMNS", "LINES"):
        env.pop(name, None)
    return env


def render(example: Example, outputs: list[list[str]]) -> list[str]:
    lines = []
    for command, output in zip(example.commands, outputs):
        lines.append(f"$ {command}")
        lines.extend(output)
    return lines


def pages() -> list[Path]:
    """The README and every page of docs/: where the examples are."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", type=Path, help="Markdown files (default: README.md and docs/*.md)")
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 with a diff when they differ")
    parser.add_argument("--offline", action="store_true", help="skip examples whose releases are not cached")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="this example only (repeatable)")
    parser.add_argument("--commands", action="store_true", help="every other example of the pages and of --help: "
                        "read by compat's parser, and run as written in the samples folder unless it says what you bring")
    parser.add_argument("--all", action="store_true", help="with --commands: run the slow ones too (ranges of releases)")
    args = parser.parse_args(argv)
    if args.commands:
        from example_commands import check_commands

        return check_commands(args.pages or pages(), offline=args.offline, run_slow=args.all)
    ran, skipped, differ = [], [], 0
    for page in args.pages or pages():
        differ += run_page(page, args, ran, skipped)
    print(f"examples run: {', '.join(ran) or 'none'}" + (f"; skipped: {'; '.join(skipped)}" if skipped else ""))
    return 1 if args.check and differ else 0


def run_page(page: Path, args: argparse.Namespace, ran: list[str], skipped: list[str]) -> int:
    """Run one page's examples (rewriting it, or with --check comparing); the number that differ."""
    lines = page.read_text().split("\n")
    examples = [e for e in parse(lines, page.name) if not args.only or e.name in args.only]
    changed, page_ran, page_skipped = [], [], []
    for example in reversed(examples):  # from the end, so earlier line numbers stay valid while rewriting
        missing = [n for n in example.needs if not cached(n)]
        if args.offline and (example.network or missing):
            page_skipped.append(f"{example.name} ({'needs the package index' if example.network else 'not cached: ' + ', '.join(missing)})")
            continue
        new = render(example, run_example(example, offline=args.offline))
        page_ran.append(example.name)
        old = lines[example.start:example.end]
        if new != old:
            changed.append((example.name, old, new))
            lines[example.start:example.end] = new
    ran.extend(reversed(page_ran))
    skipped.extend(reversed(page_skipped))
    for name, old, new in reversed(changed):
        verb = "differs from what the commands print" if args.check else "rewritten"
        print(f"{page.name} example {name}: {verb}")
        if args.check:
            sys.stdout.writelines(difflib.unified_diff([f"{x}\n" for x in old], [f"{x}\n" for x in new],
                                                       f"{page.name} ({name})", "the commands"))
    if changed and not args.check:
        page.write_text("\n".join(lines))
    return len(changed)


if __name__ == "__main__":
    raise SystemExit(main())
