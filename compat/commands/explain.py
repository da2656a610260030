"""`compat explain`: an engine error or a server log, mapped back to the release's source and to a fix."""

from __future__ import annotations

from compat.core.output import EXAMPLES_HERE, add_json_argument, examples_yours, exit_codes
from compat.commands._source import add_source_arguments

NAME = "explain"
ORDER = 35
SUMMARY = "paste an engine error or give a server log: where the release raised it, why, and the fix"
DESCRIPTION = (
    "Read an error message, a traceback or a whole vLLM / SGLang log and match it, line by line, against the raise "
    "sites and logger calls of the release's speculative-decoding code (config, argument parsing, model runners, "
    "proposers, drafter models, loaders), read statically from its source like `compat probe`. A traceback's frames "
    "locate the error exactly (file and line in that release). For each finding: its kind, the site (file:line), the "
    "engine's message, the cause in one line and the fix from compat's catalog (a patch whose version range covers the "
    "release, a conversion, a release to move to, or a flag). vLLM's `SpecDecoding metrics` lines and SGLang's "
    "`accept len` lines are read as acceptance over time and judged by the rule `verify --server` uses. Text that "
    "matches nothing is said to be not recognised; a failure that is not about speculative decoding (out of memory, "
    "an exception in your own code) is said to be unrelated."
)
EPILOG = EXAMPLES_HERE + """
  compat explain "ValueError: Eagle3 is only supported for ['llama', 'qwen'] models. Got model_type='kimi_k2'" --engine vllm==0.11.0
  compat explain "Cannot find any model weights" --engine vllm      a fragment: its site in every release
                                                    (no vLLM installed: every release compat covers)

""" + examples_yours("the engine's log, an issue's text, a serving venv") + """
  compat explain --log server.log                   the release the log states (`vLLM API server version ...`)
  compat explain --log server.log --engine vllm --python /opt/venv/bin/python    the serving venv's vLLM
  vllm serve ... 2>&1 | tail -200 | compat explain - --engine vllm==0.32.0
  compat explain --log server.log --engine vllm==0.32.0 --json                      for CI
  compat explain server.log --engine vllm            no vLLM installed here: the releases the log names, else every
                                                    release compat covers; each finding says which releases raise it
  compat explain "$(cat issue.txt)"                 no --engine: the release the text names (banner, wheel, image tag)

The release is the one that produced the text: --engine vllm==X (fetched once, then cached), --engine vllm with
--python for the installed one, or --path for a source tree; without any, the release a pasted text names (`vLLM API
server version 0.11.0`, `vllm/vllm-openai:v0.11.0`, a wheel, a pip or conda list row), said so. With --engine vllm
and no vLLM installed, the releases the text names (a log's `vLLM API server version ...`) are tried, else every
release compat covers (vLLM >= 0.10.0, SGLang >= 0.4.4; --offline: the cached ones), and the answer says which
releases raise each message; a traceback's frames show the engine's code at each line, which must be that release's.

Logs are read in every form they take: each engine's process prefixes (`(EngineCore_DP0 pid=..)`, `[rank0]:`,
SGLang's `[time TP0]`), log heads, colours, kubectl/journald/docker compose prefixes, several processes interleaved,
tracebacks cut short, a traceback flattened onto one line. A fragment or a paraphrase of a message is matched by its
words: a fragment names its site (said to be a fragment); otherwise the nearest sites are listed with how well each
matches, never as a match. What upstream threads carry is read too: an issue title (the message behind the user's
words, cut short), an error Python raised at an access (`'X' object has no attribute 'y'`: the release's line that
makes it, and what the class has), an assert quoted by its expression, a paragraph's names, the user's own frame.

""" + exit_codes(c0="something was recognised (an error, a warning, acceptance numbers, or an unrelated failure)",
                 c1="nothing in the text was recognised (the releases searched are listed)",
                 c3="the release cannot be had (no such version, offline with an empty cache)")


def add_arguments(parser) -> None:
    parser.add_argument("text", nargs="*", metavar="TEXT",
                        help="the error text (quote it), a log file, or - to read standard input")
    parser.add_argument("--log", metavar="FILE", help="a log file to read (streamed; - for standard input)")
    add_source_arguments(parser)
    add_json_argument(parser, "print the findings as JSON: {findings: [{kind, site, message, cause, fix}], ...}")


def run(args, console) -> int:
    import sys

    from compat.commands._source import open_source
    from compat.core.console import heartbeat, show_progress
    from compat.core.errors import EXIT_CHECK_FAILED, EXIT_OK, UsageError
    from compat.explain.run import explain_input, render
    from compat.core.output import print_json

    if args.text and args.log:
        raise UsageError("give the text or --log FILE, not both")
    if not args.text and not args.log and sys.stdin.isatty():
        raise UsageError("nothing to explain: give the error text, --log FILE, or - to read standard input",
                         hint='compat explain "the error message" --engine vllm==0.32.0')
    if args.text and args.text != ["-"] and not " ".join(args.text).strip():
        # an empty quote (a shell variable that was never set) would otherwise be searched and come back "not recognised"
        raise UsageError("the text to explain is empty", hint='paste the error message (compat explain "ValueError: ..."), '
                         "give the log (compat explain server.log), or pipe it in with -")
    with heartbeat("explain", show_progress(args)) as beat:  # into a log: a line every few seconds however it goes
        beat.state = "reading the text against the release's source"
        result = explain_input(args, open_source, progress=not args.json)
    if args.json:
        print_json(result.to_json(), "explain")
    else:
        render(result, console)
    return EXIT_OK if result.recognised else EXIT_CHECK_FAILED
