"""`compat verify --server URL --concurrency 1,2,4,...`: run the sweep, print it, write its profile and page, and
the exit code (0 it pays somewhere and the acceptance is healthy, 1 otherwise or on a regression under --compare,
2 a baseline that is not one, 3 a server unreachable or gone mid-way, 130 interrupted: the levels measured are
printed and written all the same)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from compat.core.errors import EXIT_INTERRUPTED, RefusedError, UsageError
from compat.verify.server.run import ServerRun
from compat.verify.sweep.levels import DEFAULT_LEVEL_TIMEOUT, requests_for


def sweep_run(args: argparse.Namespace, server: ServerRun, profile: Any = None):
    from compat.verify.sweep.measure import SweepRun

    timeout = DEFAULT_LEVEL_TIMEOUT if args.level_timeout is None else args.level_timeout
    if not timeout > 0:
        raise UsageError("--level-timeout must be a positive number of seconds")
    levels = args.concurrency
    per_level = args.num_prompts
    if profile is not None:
        levels = levels or profile.levels
        per_level = per_level or profile.requests_per_level or None
        changes: dict[str, Any] = {}
        if args.max_tokens is None and profile.max_tokens:
            changes["max_tokens"] = profile.max_tokens
        if args.temperature is None and profile.temperature is not None:
            changes["temperature"] = profile.temperature
        server = dataclasses.replace(server, **changes) if changes else server
    if not levels:
        levels = (server.concurrency,)
    if isinstance(per_level, int) and per_level < 1:
        raise UsageError("--num-prompts must be at least 1")
    server_log = getattr(args, "server_log", None)
    if server_log:
        from compat.verify.sweep.server_log import LogTail

        LogTail.check(server_log)  # before any server is asked
    return SweepRun(server, tuple(levels), per_level, timeout, server_log)


def run_sweep_command(args: argparse.Namespace, server: ServerRun, console: Any) -> int:
    from compat.verify.sweep.document import document, exit_code
    from compat.verify.sweep.measure import prepare, sweep
    from compat.verify.sweep.progress import SweepProgress

    fmt = "json" if args.json else (args.format or "text")
    profile = None
    if args.compare:
        from compat.verify.sweep.profile import read_profile

        profile = read_profile(args.compare)
    run = sweep_run(args, server, profile)
    outputs = _outputs(args)
    total = sum(requests_for(level, run.requests_per_level) for level in run.levels) * (2 if server.baseline else 1)
    with SweepProgress(total, enabled=fmt == "text" and not getattr(args, "quiet", 0)) as progress:
        prepared = prepare(run, progress)
        result = sweep(run, progress, prepared)
    doc = document(result)
    if profile is not None:
        from compat.verify.sweep.compare import compare

        doc["compare"] = compare(profile, doc)
        if doc["compare"]["regressions"]:
            doc["failures"].append({"check": "compare", "message": doc["compare"]["summary"]})
            doc["passed"] = False
    doc["written"] = _write(doc, outputs, result)
    code = exit_code(doc, result.stop.exit_code if result.stop else None)
    _print(doc, fmt, console)
    return EXIT_INTERRUPTED if code == EXIT_INTERRUPTED else code


def _outputs(args: argparse.Namespace) -> dict[str, str]:
    """Where the profile and page go, checked before the sweep: a path that cannot be written fails at once."""
    from pathlib import Path

    out = {}
    for key, flag, value, name in (("profile", "--save-profile", args.save_profile, "speculation_profile.json"),
                                   ("page", "--page", args.page, None)):
        if value is None:
            continue
        path = Path(value).expanduser()
        if path.is_dir():
            if name is None:
                raise RefusedError(f"{flag} {value}: a directory; name the file", hint=f"{flag} {path / 'sweep.html'}")
            path = path / name
        if not path.parent.is_dir():
            raise UsageError(f"{flag} {value}: no such directory {path.parent}")
        out[key] = str(path)
    return out


def _write(doc: dict, outputs: dict[str, str], result: Any) -> list[str]:
    from compat.verify.sweep.files import write_text

    written = []
    if "profile" in outputs:
        import json

        from compat.verify.sweep.doctor_at import doctor_verdict
        from compat.verify.sweep.profile import build_profile

        doctor = doctor_verdict(doc, cache_dir=result.run.server.cache_dir, offline=result.run.server.offline)
        write_text(outputs["profile"], json.dumps(build_profile(doc, result, doctor), indent=2) + "\n")
        written.append(f"{outputs['profile']} (speculation profile)")
    if "page" in outputs:
        from compat.verify.sweep.page import page

        write_text(outputs["page"], page(doc))
        written.append(f"{outputs['page']} (page)")
    return written


def _print(doc: dict, fmt: str, console: Any) -> None:
    from compat.core.output import exit_code_if_unread, print_json

    with exit_code_if_unread(0 if doc["passed"] else 1):
        if fmt == "json":
            print_json(doc, "verify-sweep")
        elif fmt == "md":
            from compat.verify.sweep.render import markdown

            console.print(markdown(doc), markup=False, highlight=False, soft_wrap=True)
        else:
            from compat.verify.sweep.render import render_sweep

            render_sweep(doc, console)
