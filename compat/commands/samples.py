"""`compat samples DIR`: the sample targets and drafters the README's and docs/' examples use, written in a second."""

from __future__ import annotations

from pathlib import Path

from compat.core.output import EXAMPLES_HERE, add_json_argument, exit_codes, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from rich.console import Console

NAME = "samples"
ORDER = 5
SUMMARY = "write sample targets and drafters (the seed case included) to try every example on"
DESCRIPTION = (
    "Write small sample targets and EAGLE-3 drafters into DIR: config.json files as the real models declare them "
    "and drafters whose tensor names, shapes and configs are what their trainers write (the tensors are tiny: compat "
    "never runs a model, it reads names and configs). The seed case is among them: Kimi-K2.5 with a SpecForge-"
    "trained drafter whose ids vLLM reads one layer low. Every example in the README and docs/ runs in DIR."
)
EPILOG = EXAMPLES_HERE + """
  compat samples demo                   write them into ./demo (made if absent)
  compat samples demo --json            what was written, for scripts
  compat doctor Kimi-K2.5 kimi-k25-eagle3-ft --engine vllm==0.16.0 -q
                                        the seed case, diagnosed against vLLM 0.16.0's source

A folder already in DIR with a sample's name is kept when it holds that sample's files (an earlier run), and
refused otherwise (exit 4, nothing written): it may be a real model of the same name.

""" + exit_codes(c4="DIR holds a folder with a sample's name that is not that sample; nothing was written")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from compat.commands._source import absolute_path

    parser.add_argument("dir", metavar="DIR", type=absolute_path, help="where to write them (made if absent)")
    add_json_argument(parser, "print what was written as JSON")


def run(args: argparse.Namespace, console: Console) -> int:
    from compat.core.errors import EXIT_OK
    from compat.core.files import refuse_os_error, writable_folder
    from compat.core.output import print_json
    from compat.samples import write_samples

    args.dir = Path(args.dir)
    writable_folder(args.dir, "DIR", "compat samples ~/compat-samples (made if absent)")
    args.change_made = None
    try:
        written = write_samples(args.dir)
    except OSError as err:  # the disk filling up, a folder changed under the run: one line, nothing left behind
        raise refuse_os_error(err, args.dir, "writing the samples") from None
    args.change_made = f"the samples were written in {args.dir}"
    if args.json:
        print_json({"dir": str(args.dir), "samples": [
            {"name": w.sample.name, "kind": w.sample.kind, "path": str(w.path), "state": w.state, "about": w.sample.about}
            for w in written]}, "samples")
        return EXIT_OK
    say = lambda text: console.out(text, highlight=False)  # noqa: E731 - plain lines, never wrapped
    fresh = sum(w.state == "written" for w in written)
    say(f"{plural(fresh, 'sample')} written in {args.dir}" + (f", {len(written) - fresh} already there" if fresh < len(written) else ""))
    width = max(len(w.sample.name) for w in written)
    for w in written:
        say(f"  {w.sample.name:<{width}}  {w.sample.kind:<7}  {w.sample.about}")
    say("try, in that folder (the seed case against vLLM 0.16.0's source, fetched once):")
    say("  compat doctor Kimi-K2.5 kimi-k25-eagle3-ft --engine vllm==0.16.0 -q")
    return EXIT_OK
