"""The `--server` options of `compat verify`, their checks, and the run (commands/verify.py only dispatches here)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from compat.core.errors import EXIT_CHECK_FAILED, EXIT_OK, UsageError
from compat.verify.server.run import (DEFAULT_CONCURRENCY, DEFAULT_MAX_TOKENS, DEFAULT_NUM_PROMPTS, DEFAULT_REQUEST_TIMEOUT,
                                      ServerRun)

# Options of the local run (TARGET DRAFTER, --canary) that mean nothing against a server.
LOCAL_ONLY = (("target", "TARGET"), ("drafter", "DRAFTER"), ("canary", "--canary"), ("python", "--python"),
              ("prompt", "--prompt"), ("prompt_ids", "--prompt-ids"), ("family", "--family"), ("dtype", "--dtype"),
              ("num_speculative_tokens", "--num-speculative-tokens"), ("log_dir", "--log-dir"), ("timeout", "--timeout"))
SERVER_ONLY = (("baseline", "--baseline"), ("prompts", "--prompts"), ("concurrency", "--concurrency"),
               ("temperature", "--temperature"), ("api_key", "--api-key"), ("model", "--model"),
               ("request_timeout", "--request-timeout"), ("seed", "--seed"), ("offline", "--offline"),
               ("cache_dir", "--cache-dir"))


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("a running server (--server)")
    group.add_argument("--server", metavar="URL", help="measure the OpenAI-compatible vLLM or SGLang server at URL "
                       "(http://host:8000, https://...); engine, version, model and speculative settings are read from it")
    group.add_argument("--baseline", metavar="URL2", help="the same model served without speculation: adds the speed-up "
                       "and whether greedy outputs are equal")
    group.add_argument("--prompts", metavar="FILE.jsonl", help="your traffic: one conversation a line, "
                       '{"messages": [{"role": "user", "content": "..."}]} (default: compat\'s 100 built-in chat prompts)')
    group.add_argument("--concurrency", type=int, default=None, metavar="N",
                       help=f"requests in flight at once (default {DEFAULT_CONCURRENCY})")
    group.add_argument("--temperature", type=float, default=None, metavar="T",
                       help="sampling temperature (default 0: greedy; sampled runs exercise other engine paths)")
    group.add_argument("--seed", type=int, default=None, metavar="S", help="the request seed, for sampled runs")
    group.add_argument("--api-key", metavar="KEY", help="the server's API key (default: $OPENAI_API_KEY)")
    group.add_argument("--model", metavar="NAME", help="which served model to measure (default: the first /v1/models lists)")
    group.add_argument("--request-timeout", type=float, default=None, metavar="S",
                       help=f"give up on one request after S seconds (default {DEFAULT_REQUEST_TIMEOUT:.0f})")
    group.add_argument("--offline", action="store_true", help="read the server's release from the cache only")
    group.add_argument("--cache-dir", metavar="DIR", help="where fetched releases are kept (default: the user cache)")


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
    temperature = 0.0 if args.temperature is None else args.temperature
    if not (math.isfinite(temperature) and 0 <= temperature <= 2):
        raise UsageError(f"--temperature {args.temperature}: between 0 and 2 (0 is greedy)")
    timeout = DEFAULT_REQUEST_TIMEOUT if args.request_timeout is None else args.request_timeout
    if not (math.isfinite(timeout) and timeout > 0):
        raise UsageError("--request-timeout must be a positive number of seconds")
    if args.min_acceptance is not None and not 0.0 <= args.min_acceptance <= 1.0:
        raise UsageError(f"--min-acceptance {args.min_acceptance}: a rate between 0 and 1")
    return ServerRun(args.server, prompts.take(num_prompts), engine=args.engine, model=args.model,
                     max_tokens=_positive(args.max_tokens, "--max-tokens", DEFAULT_MAX_TOKENS),
                     concurrency=_positive(args.concurrency, "--concurrency", DEFAULT_CONCURRENCY),
                     temperature=temperature, seed=args.seed, api_key=args.api_key, min_acceptance=args.min_acceptance,
                     baseline=args.baseline, request_timeout=timeout, offline=args.offline, cache_dir=args.cache_dir)


def _positive(value: int | None, flag: str, default: int) -> int:
    if value is None:
        return default
    if value < 1:
        raise UsageError(f"{flag} must be at least 1")
    return value


def run_server_command(args: argparse.Namespace, console: Any) -> int:
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
