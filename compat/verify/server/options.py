"""The `--server` options of `compat verify`, their checks, and the run (commands/verify.py only dispatches here)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from compat.core.errors import EXIT_CHECK_FAILED, EXIT_OK, UsageError
from compat.verify.server.run import (DEFAULT_CONCURRENCY, DEFAULT_MAX_TOKENS, DEFAULT_NUM_PROMPTS, DEFAULT_REQUEST_TIMEOUT,
                                      ServerRun)
from compat.verify.sweep.levels import DEFAULT_LEVEL_TIMEOUT, MAX_REQUESTS, MIN_REQUESTS, REQUESTS_PER_SLOT, concurrency_list

# Options of the local run (TARGET DRAFTER, --canary) that mean nothing against a server.
LOCAL_ONLY = (("target", "TARGET"), ("drafter", "DRAFTER"), ("canary", "--canary"), ("python", "--python"),
              ("prompt", "--prompt"), ("prompt_ids", "--prompt-ids"), ("family", "--family"), ("dtype", "--dtype"),
              ("num_speculative_tokens", "--num-speculative-tokens"), ("log_dir", "--log-dir"), ("timeout", "--timeout"),
              ("method", "--method"))
# --prompts is both modes' (chat messages with --server, vLLM offline prompts without): not listed.
SERVER_ONLY = (("baseline", "--baseline"), ("concurrency", "--concurrency"),
               ("temperature", "--temperature"), ("api_key", "--api-key"), ("model", "--model"),
               ("request_timeout", "--request-timeout"), ("seed", "--seed"), ("offline", "--offline"),
               ("cache_dir", "--cache-dir"), ("level_timeout", "--level-timeout"), ("save_profile", "--save-profile"),
               ("page", "--page"), ("compare", "--compare"), ("format", "--format"), ("server_log", "--server-log"))
# The options that make --server a concurrency sweep even with one level.
SWEEP_ONLY = (("level_timeout", "--level-timeout"), ("save_profile", "--save-profile"), ("page", "--page"),
              ("compare", "--compare"), ("format", "--format"), ("server_log", "--server-log"))


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("a running server (--server)")
    group.add_argument("--server", metavar="URL", help="measure the OpenAI-compatible vLLM or SGLang server at URL "
                       "(http://host:8000, https://...); engine, version, model and speculative settings are read from it")
    group.add_argument("--baseline", metavar="URL2", help="the same model served without speculation: adds the speed-up "
                       "and whether greedy outputs are equal")
    group.add_argument("--prompts", metavar="FILE.jsonl", help="your traffic: one conversation a line, "
                       '{"messages": [{"role": "user", "content": "..."}]} (default: compat\'s 100 built-in chat prompts); without --server: vLLM '
                       'offline prompts, {"prompt": "..."} or {"prompt_token_ids": [...]} a line')
    group.add_argument("--concurrency", type=concurrency_list, default=None, metavar="N[,N...]",
                       help=f"requests in flight at once (default {DEFAULT_CONCURRENCY}); a list (1,2,4,8,16) sweeps the "
                       "levels: per level throughput, TTFT/ITL p50 and p95, acceptance per position and, with --baseline, "
                       "the speed-up, the crossover concurrency and whether speculation pays")
    group.add_argument("--temperature", type=float, default=None, metavar="T",
                       help="sampling temperature (default 0: greedy; sampled runs exercise other engine paths)")
    group.add_argument("--seed", type=int, default=None, metavar="S", help="the request seed, for sampled runs")
    group.add_argument("--api-key", metavar="KEY", help="the server's API key (default: $OPENAI_API_KEY)")
    group.add_argument("--model", metavar="NAME", help="which served model to measure (default: the first /v1/models lists)")
    group.add_argument("--request-timeout", type=float, default=None, metavar="S",
                       help=f"give up on one request after S seconds (default {DEFAULT_REQUEST_TIMEOUT:.0f})")
    group.add_argument("--offline", action="store_true", help="read the server's release from the cache only")
    group.add_argument("--cache-dir", metavar="DIR", help="where fetched releases are kept (default: the user cache)")
    sweep = parser.add_argument_group("a concurrency sweep (--server URL --concurrency 1,2,4,8,16)")
    sweep.add_argument("--level-timeout", type=float, default=None, metavar="S", help="stop sending a level's requests "
                       f"after S seconds, those in flight finish (default {DEFAULT_LEVEL_TIMEOUT:.0f}); --num-prompts is the "
                       f"requests per level (default {REQUESTS_PER_SLOT} per slot, at least {MIN_REQUESTS}, at most {MAX_REQUESTS})")
    sweep.add_argument("--save-profile", metavar="FILE", help="write the measurement as a speculation_profile.json "
                       "(NVIDIA ModelOpt's schema 1.0, with compat's fields beside it: engine, release, launch line, doctor's "
                       "verdict, the sweep); a directory gets FILE/speculation_profile.json")
    sweep.add_argument("--page", metavar="FILE.html", help="write a static page: speed-up against concurrency with the "
                       "crossover, acceptance per position against published references, latency bands (loads nothing)")
    sweep.add_argument("--compare", metavar="PROFILE", help="measure again as PROFILE was measured (its levels, requests "
                       "and tokens) and say what changed per position and per level, and against which release; "
                       "exit 1 on a regression")
    sweep.add_argument("--server-log", metavar="FILE", help="the server's log as it is written (a file on this machine): "
                       "its acceptance lines during each level (SGLang's `accept len`, vLLM's `SpecDecoding metrics`), "
                       "for a server whose counters compat cannot difference (SGLang without --enable-metrics)")
    sweep.add_argument("--format", choices=("text", "json", "md"), default=None,
                       help="how to print the sweep (json: the same as --json; md: a markdown report)")


def check_mode(args: argparse.Namespace) -> None:
    """Options of one mode given in the other: a usage error naming them."""
    if args.server:
        given = [flag for attr, flag in LOCAL_ONLY if getattr(args, attr, None)]
        if given:
            raise UsageError(f"--server measures a running server: drop {', '.join(given)}",
                             hint="compat verify --server http://host:8000 [--prompts FILE] [--baseline URL2]")
        return
    given = [flag for attr, flag in SERVER_ONLY if getattr(args, attr, None) not in (None, False)]
    if given:
        raise UsageError(f"{', '.join(given)} go(es) with --server URL")


def server_run(args: argparse.Namespace) -> ServerRun:
    """The validated run: every usage error before any request is sent."""
    from compat.sources import parse_engine_spec
    from compat.verify.server.http import normalize_url
    from compat.verify.server.prompts import builtin, from_file

    check_mode(args)
    for flag, url in (("--server", args.server), ("--baseline", args.baseline)):
        if url is not None:
            try:
                normalize_url(url)
            except ValueError as err:
                raise UsageError(f"{flag} {url}: {err}", hint="e.g. http://127.0.0.1:8000 or https://llm.example.com") from None
    if args.engine:
        spec = parse_engine_spec(args.engine)
        if spec.specifier == "latest":
            raise UsageError(f"--engine {args.engine}: name the server's release (==VERSION) or just the engine")
    num_prompts = _positive(args.num_prompts, "--num-prompts", DEFAULT_NUM_PROMPTS)
    prompts = from_file(args.prompts) if args.prompts else builtin()
    levels = args.concurrency or (DEFAULT_CONCURRENCY,)
    temperature = 0.0 if args.temperature is None else args.temperature
    if not (math.isfinite(temperature) and 0 <= temperature <= 2):
        raise UsageError(f"--temperature {args.temperature}: between 0 and 2 (0 is greedy)")
    timeout = DEFAULT_REQUEST_TIMEOUT if args.request_timeout is None else args.request_timeout
    if not (math.isfinite(timeout) and timeout > 0):
        raise UsageError("--request-timeout must be a positive number of seconds")
    if args.min_acceptance is not None and not 0.0 <= args.min_acceptance <= 1.0:
        raise UsageError(f"--min-acceptance {args.min_acceptance}: a rate between 0 and 1")
    return ServerRun(args.server, prompts if is_sweep(args) else prompts.take(num_prompts), engine=args.engine,
                     model=args.model, max_tokens=_positive(args.max_tokens, "--max-tokens", DEFAULT_MAX_TOKENS),
                     concurrency=levels[0],
                     temperature=temperature, seed=args.seed, api_key=args.api_key, min_acceptance=args.min_acceptance,
                     baseline=args.baseline, request_timeout=timeout, offline=args.offline, cache_dir=args.cache_dir)


def _positive(value: int | None, flag: str, default: int) -> int:
    if value is None:
        return default
    if value < 1:
        raise UsageError(f"{flag} must be at least 1")
    return value


def is_sweep(args: argparse.Namespace) -> bool:
    """A list of levels, or an option only a sweep has, makes --server a sweep."""
    return len(args.concurrency or ()) > 1 or any(getattr(args, attr, None) is not None for attr, _ in SWEEP_ONLY)


def run_server_command(args: argparse.Namespace, console: Any) -> int:
    if is_sweep(args):
        from compat.verify.sweep.command import run_sweep_command

        return run_sweep_command(args, server_run(args), console)
    from compat.core.output import print_json
    from compat.verify.server import verify_server
    from compat.verify.server.progress import ServerProgress
    from compat.verify.server.render import render_server

    run = server_run(args)
    with ServerProgress(enabled=not args.json and not getattr(args, "quiet", 0)) as progress:
        document = verify_server(run, progress)
    if args.json:
        print_json(document, "verify-server")
    else:
        render_server(document, console)
    return EXIT_OK if document["passed"] else EXIT_CHECK_FAILED
