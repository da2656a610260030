"""`compat doctor --manifest FILE|DIR`: the command's run (compat/commands/doctor.py hands the parsed options here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compat.core.errors import EXIT_CHECK_FAILED, EXIT_OK, RefusedError, UsageError
from compat.manifests import Settings, check_paths

FORMATS = ("text", "json", "sarif", "junit")


def model_roots(values: list[str]) -> list[tuple[str, Path]]:
    """`--model-root DIR` (a model's path or id looked up under DIR) or `--model-root /models=DIR` (the manifest's
    /models/x is DIR/x here)."""
    out = []
    for value in values:
        prefix, eq, directory = value.rpartition("=") if "=" in value else ("", "", value)
        root = Path(directory).expanduser()
        if not root.is_dir():
            raise UsageError(f"--model-root {value!r}: {root} is not a directory",
                             hint="--model-root DIR, or --model-root /models=DIR (the manifest's /models/x is DIR/x here)")
        out.append((prefix, root))
    return out


def check_given(paths: list[str]) -> None:
    """Before anything is read: a path that names nothing is a usage error (2); a folder holding no manifest file
    (a chart whose templates only Helm can render) is refused (4), rather than "0 files" and a pass."""
    from compat.manifests.scan import SUFFIXES, walk

    for given in paths:
        path = Path(given)
        if given == "-" or path.is_file():
            continue
        if not path.exists():
            raise UsageError(f"--manifest {given}: no such file or directory", hint="give a manifest file or a directory of them")
        if path.is_dir() and not walk(path):
            raise RefusedError(f"--manifest {given}: no {' or '.join(SUFFIXES)} file in it (templates/, charts/ and "
                               "hidden folders are not read)",
                               hint=f"a chart: helm template {given} | compat doctor --manifest - --engine ...")


def settings_of(args: Any) -> Settings:
    from compat.sources import parse_engine_spec

    spec = parse_engine_spec(args.engine) if args.engine else None
    if spec is not None and not (spec.released and (spec.specifier or "").startswith("==")):
        raise UsageError(f"--engine {args.engine!r} with --manifest names the release the images whose tag says nothing run",
                         hint="e.g. --engine vllm==0.11.0")
    return Settings(engine=spec, model_roots=model_roots(args.model_root or []),
                    layer_ids_convention=args.layer_ids_convention, cache_dir=args.cache_dir, offline=args.offline)


def run(args: Any, console: Any) -> int:
    from compat.core.console import progress_bar, show_progress
    from compat.core.output import exit_code_if_unread, print_json

    form = "json" if args.json else (args.format or "text")
    check_given(args.manifest)
    outcome = check_paths(args.manifest, settings_of(args),
                          progress_bar("doctor") if show_progress(args) and form == "text" else None)
    code = EXIT_CHECK_FAILED if outcome.failed else EXIT_OK
    if args.fix:
        from compat.manifests.fix import run_fix

        return run_fix(outcome, args, console, code)
    if args.write:
        raise UsageError("--write goes with --fix", hint="compat doctor --manifest DIR --fix --write")
    with exit_code_if_unread(code):
        if form == "json":
            from compat.manifests.render import to_json

            print_json({**to_json(outcome), "exit_code": code}, "doctor-manifest")
        elif form == "sarif":
            from compat.manifests.report_formats import sarif

            print(json.dumps(sarif(outcome), indent=1))
        elif form == "junit":
            from compat.manifests.report_formats import junit

            print(junit(outcome), end="")
        else:
            from compat.manifests.render import render

            render(outcome, console, only_problems=bool(args.quiet))
    return code
