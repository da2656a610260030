"""`compat matrix`: every release x target family x drafter kind, doctor's verdict in each cell, as a page.

The data is compat/matrix/ (templates, doctor's rows, the page); this file is the command line and where the
output goes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from compat.core.output import EXAMPLES_HERE, exit_codes, plural

NAME = "matrix"
ORDER = 45
SUMMARY = "the compatibility matrix: releases x target families x drafter kinds, doctor's verdict per cell (a page)"
DESCRIPTION = (
    "Run doctor on every release of an engine for built-in targets (llama, qwen3, qwen3-moe, deepseek-v3, kimi-k2, "
    "kimi-k2.5, glm4-moe, gpt-oss, minimax, gemma3: their real config fields) and drafter kinds (speculators: "
    "capture-before ids; SpecForge: output-of ids; ModelOpt; no ids recorded; and the other methods' drafters: DFlash "
    "and DSpark from SpecForge, speculators and DeepSpec, MTP heads in the target, n-gram), each column with its method "
    "(--method picks them; the page has a selector; matrix.json says each row's), and your own target + drafter as one "
    "more column. Each cell is doctor's verdict with its fixes and failing checks; on the page a click shows the checks, "
    "each linked to the upstream source line at that release's tag. Written: matrix.html (one file, nothing loaded "
    "from the network) and matrix.json beside it; --format md a markdown table."
)
EXAMPLES = EXAMPLES_HERE + """
  compat matrix --engine vllm --out site/                  every vLLM release from 0.10.0: site/matrix.html + matrix.json
  compat matrix --engine vllm --engine sglang --target Kimi-K2-Instruct --drafter kimi-k2-eagle3 --out site/
                                   both engines on one page, your pair first, beside the families
  compat matrix --engine sglang --releases '>=0.5.5' --family kimi-k2 --family llama --format md
  compat matrix --engine vllm --engine sglang --releases 'vllm:>=0.30' --releases 'sglang:>=0.5.8' --out site/
  compat matrix --engine vllm --target Llama-3.3-70B-Instruct --drafter Llama-3.3-70B-Instruct-Eagle3 --kind specforge --format json | jq '.rows[0]'
  compat matrix --engine sglang --method dspark --method dflash --format md     the block drafters only

The first run fetches and probes the releases it lacks (a progress bar on a terminal); after that the cells are
read from the cache (<cache>/matrix/cells), and a whole engine's page is rebuilt in seconds.
"""
EPILOG = EXAMPLES + "\n" + exit_codes(
    c0="the matrix was built (whatever its cells say)",
    c3="no release of the range could be obtained",
    c4="--target or --drafter could not be read, or --out is not a directory this user can write",
)
FORMATS = ("html", "json", "md")


def add_arguments(parser) -> None:
    from compat.checkpoints import add_flag as add_convention_flag
    from compat.checkpoints import add_layer_ids_flag
    from compat import engines
    from compat.matrix import DRAFTER_KINDS, FAMILIES, default_releases

    parser.add_argument("--engine", action="append", choices=engines.names(), required=True,
                        help=f"{engines.choices_text()}; twice for both on one page")
    parser.add_argument("--releases", metavar="SPEC", action="append", help="the releases, e.g. '>=0.15,<0.34', or one "
                        "engine's: 'sglang:>=0.5.8' (repeatable; default: " + ", ".join(f"{e} {s}" for e, s in
                                                                                       default_releases().items()) + ")")
    parser.add_argument("--target", metavar="TARGET", help="your target (directory or config.json, or a Hugging Face id "
                        "in the local cache): a column of its own, with --drafter")
    parser.add_argument("--drafter", metavar="DRAFTER", help="your drafter directory (config.json + safetensors headers)")
    add_convention_flag(parser)
    add_layer_ids_flag(parser)
    parser.add_argument("--family", action="append", choices=[f.id for f in FAMILIES], metavar="FAMILY",
                        help="only these target families (repeatable; default all: " + ", ".join(f.id for f in FAMILIES) + ")")
    from compat.matrix.method_templates import KIND_METHODS

    kinds = (*DRAFTER_KINDS, *KIND_METHODS)
    parser.add_argument("--kind", action="append", choices=kinds, metavar="KIND",
                        help="only these drafter kinds (repeatable; default all: " + ", ".join(kinds) + ")")
    methods = ("eagle3", *dict.fromkeys(KIND_METHODS.values()))
    parser.add_argument("--method", action="append", choices=methods, metavar="METHOD",
                        help="only the columns of these methods (repeatable; default all: " + ", ".join(methods) + ")")
    parser.add_argument("--format", choices=FORMATS, default="html",
                        help="html (default: matrix.html + matrix.json), json (matrix.json) or md (a markdown table)")
    parser.add_argument("--out", metavar="DIR", help="the directory to write into (default for html: ./compat-matrix; "
                        "json and md print to stdout without it)")
    parser.add_argument("--cache-dir", metavar="DIR", help="where fetched releases are kept (default: ~/.cache/compat)")
    parser.add_argument("--offline", action="store_true", help="never touch the network; use only cached releases")


def run(args, console) -> int:
    from compat.core.console import progress_bar, show_progress
    from compat.core.errors import EXIT_OK, EXIT_SOURCE, UsageError
    from compat.matrix import SOURCE_UNAVAILABLE, build, write_templates

    if bool(args.target) != bool(args.drafter):
        raise UsageError("--target and --drafter go together (your pair is one column)",
                         hint="e.g. compat matrix --engine vllm --target ./Kimi-K2-Instruct --drafter ./kimi-k2-eagle3")
    _check_out(args)  # before minutes of work, not after
    engines = list(dict.fromkeys(args.engine))
    user = _user_pair(args) if args.target else None
    columns = write_templates(args.cache_dir, families=args.family, kinds=args.kind, methods=args.method)
    if user is None and not columns:
        raise UsageError("no column left: --family, --kind and --method select none together")
    progress = progress_bar("matrix") if show_progress(args) else None
    ranges = _ranges(args.releases or [], engines)
    document = merge([build([engine], columns, releases=ranges.get(engine), user=user, cache_dir=args.cache_dir,
                            offline=args.offline, progress=progress) for engine in engines])
    if all(r["verdict"] == SOURCE_UNAVAILABLE for r in document["rows"]):
        code = EXIT_SOURCE
    else:
        code = EXIT_OK
    document["command"] = "compat matrix " + " ".join(_shown_argv())
    _emit(args, document, console)
    return code


def _ranges(given: list[str], engines: list[str]) -> dict[str, str]:
    """engine -> its --releases spec: `SPEC` for every engine, `ENGINE:SPEC` for one (which wins)."""
    from compat import engines as units
    from compat.core.errors import UsageError

    out: dict[str, str] = {}
    for item in given:
        engine, sep, spec = item.partition(":")
        if sep and units.find(engine) is not None:
            if engine not in engines:
                raise UsageError(f"--releases {item!r} names {engine}, which no --engine gives", hint=f"add --engine {engine}")
            out[engine] = spec
        else:
            out.update({e: item for e in engines if e not in out})
    return out


def merge(documents: list[dict]) -> dict:
    """One document of the engines' documents (each built alone, with its own range): same columns, rows after rows."""
    merged = {"engines": {}, "columns": documents[0]["columns"], "rows": []}
    for document in documents:
        merged["engines"].update(document["engines"])
        merged["rows"] += document["rows"]
    return merged


def _user_pair(args) -> dict:
    from compat.checkpoints import layer_ids_arg
    from compat.doctor import read_drafter, read_target
    from compat.hub import resolve_model

    target = read_target(resolve_model(args.target, what="target"))
    drafter = read_drafter(resolve_model(args.drafter, what="drafter"), target, args.layer_ids_convention,
                           layer_ids_arg(args.layer_ids))
    return {"target": target, "drafter": drafter}


def _check_out(args) -> Path:
    """Where the page goes: a file on its path, or a folder this user may not write, is refused before the work (4)."""
    out = Path(args.out or "compat-matrix").expanduser()
    if args.out or args.format == "html":
        from compat.core.files import writable_folder

        writable_folder(out, "--out", "compat matrix ... --out ~/compat-matrix (made when missing)")
    return out


def _shown_argv() -> list[str]:
    import shlex

    words = sys.argv[2:] if len(sys.argv) > 1 and sys.argv[1] == NAME else sys.argv[1:]
    return [shlex.quote(w) for w in words]


def _emit(args, document: dict, console) -> None:
    import json

    from compat.matrix import render_markdown
    from compat.core.output import SCHEMA_VERSION

    document = {"schema": f"compat.matrix/{SCHEMA_VERSION}", **document}
    as_json = json.dumps(document, indent=1)
    if args.format in ("json", "md") and not args.out:
        sys.stdout.write(as_json + "\n" if args.format == "json" else render_markdown(document))
        return
    out = _check_out(args)
    try:
        written = _write_page(args, document, as_json, out)
    except OSError as err:  # the disk filling up while the page is written: one line, no half page
        from compat.core.files import refuse_os_error

        raise refuse_os_error(err, out, "writing the matrix") from None
    if not args.quiet or args.quiet < 2:
        _say_written(document, written, console)


def _write_page(args, document: dict, as_json: str, out: Path) -> list[Path]:
    from datetime import datetime, timezone

    from compat.matrix import render_html, render_markdown
    from compat.sources.cache import atomic_write

    out.mkdir(parents=True, exist_ok=True)
    written = []
    if args.format in ("html", "json"):
        atomic_write(out / "matrix.json", as_json)
        written.append(out / "matrix.json")
    if args.format == "html":
        generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        atomic_write(out / "matrix.html", render_html(document, command=document["command"], generated=generated))
        written.insert(0, out / "matrix.html")
    if args.format == "md":
        atomic_write(out / "matrix.md", render_markdown(document))
        written.append(out / "matrix.md")
    _readable(written)
    return written


def _readable(paths: list[Path]) -> None:
    """A page is for reading (and serving): the umask's mode, not the 0600 of the temp file it was renamed from."""
    import os

    umask = os.umask(0)
    os.umask(umask)
    for path in paths:
        os.chmod(path, 0o666 & ~umask)


def _say_written(document: dict, written: list[Path], console) -> None:
    from collections import Counter

    from rich.text import Text

    from compat.core.output import human_size

    for path in written:
        console.print(Text(f"wrote {path} ({human_size(path.stat().st_size)})"))
    for engine, about in document["engines"].items():
        rows = [r for r in document["rows"] if r["engine"] == engine]
        counts = Counter(r["verdict"] for r in rows)
        console.print(Text(f"  {engine} {about['releases']}: {plural(len(about['versions']), 'release')} x "
                           f"{plural(len(document['columns']), 'column')}; " + ", ".join(f"{n} {v}" for v, n in counts.most_common())))

