"""`compat convert ckpt SRC DST --to LAYOUT`: rewrite a drafter checkpoint into the layout a release loads.

The work (open, plan, copy, verify, swap) is the compat/convert/ package with the layouts of
checkpoints/; this file is the command line and what it prints. Before planning, what killed runs
left beside DST is cleaned up (their owner process is gone) and said so.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from compat import engines
from compat.core.output import EXAMPLES_HERE, examples_yours, exit_codes, plural

NAME = "convert"
ORDER = 30
SUMMARY = "rewrite a drafter checkpoint into the layout an engine release loads"
DESCRIPTION = ("Rewrite a drafter checkpoint into the layout an engine release loads. One subcommand:\n"
               "  compat convert ckpt SRC DST --to LAYOUT [--engine SPEC | --path DIR]\n"
               "('compat convert ckpt --help' lists its options and every layout).")
EPILOG = exit_codes()

CKPT_EPILOG = (
    "Layer ids. capture-before i = the residual stream entering target layer i (HF hidden_states[i];\n"
    "vLLM and speculators). output-of j = the output of target layer j = capture-before j + 1\n"
    "(SpecForge, AngelSlim, ModelOpt HF training). SGLang adds +1 to declared ids (for DeepSeek/Kimi\n"
    "targets from 0.5.13 only when the first id is 1).\n\n"
    "The release: the same source options as every compat command. --engine vllm (installed here, or\n"
    "in --python PY), --engine vllm==0.20.0 or a range (a release on the package index; only its version\n"
    "is looked up, nothing is downloaded), --path DIR (a tree's version). A release that does not exist\n"
    "is refused, with the releases near it. Without any, DST is written so every known release loads it\n"
    "(refused when no single spelling does). --engine-version X is the older spelling of\n"
    "--engine <the --to layout's engine>==X (deprecated; validated the same way).\n\n"
    "SRC, DST and --target are directories (or --target's config.json); SRC and --target may also be a\n"
    "Hugging Face id (org/name, org/name@rev) found in the local Hugging Face cache (never downloaded).\n\n"
    + EXAMPLES_HERE + "\n"
    "  compat convert ckpt kimi-k2-eagle3 kimi-k2-eagle3-vllm --to vllm --engine vllm==0.20.0 --target Kimi-K2-Instruct\n"
    "  compat convert ckpt kimi-k2-eagle3 kimi-k2-eagle3-sglang --to sglang --engine sglang==0.5.8 --dry-run\n"
    "  compat convert ckpt kimi-k25-eagle3-ft kimi-k25-eagle3-spec --to speculators --target Kimi-K2.5 "
    "--layer-ids-convention output-of\n"
    "  compat convert ckpt qwen3-8b-dflash qwen3-8b-dflash-vllm --to vllm --engine vllm==0.20.0 --target Qwen3-8B\n\n"
    + examples_yours("a serving venv, a model in your Hugging Face cache") + "\n"
    "  compat convert ckpt ./drafter ./drafter-vllm --to vllm --engine vllm --python ./venv-serve/bin/python\n"
    "  compat convert ckpt ./drafter ./drafter-spec --to speculators --target moonshotai/Kimi-K2.5\n\n"
    + exit_codes(c1="what was written did not verify against SRC (DST is not put in place)",
                 c3="--engine names a release the package index cannot be asked about (offline, no listing)",
                 c4="a drafter, config or header that is not what it should be, DST exists, a disk error",
                 c130="SIGINT, SIGTERM or SIGHUP; the partial output is removed")
)


def _ckpt_description() -> str:
    from compat import checkpoints

    layouts = checkpoints.all_layouts()
    return (
        "Rewrite a drafter checkpoint into what an engine release loads: an EAGLE-3 drafter into any of the layouts\n"
        "below; a DFlash or DSpark drafter's config.json for one release and target (--engine, --target), its\n"
        "tensors copied as they are (the engines load the trainer's names).\n\n"
        "Tensor bytes are copied unchanged (only the safetensors header is rewritten) unless --dtype\n"
        "is given; config.json is rewritten for the destination; layer ids are translated so the\n"
        "engine feeds the drafter the same target hidden states it was trained on. The output is written\n"
        "into a temporary directory beside DST, every tensor is read back and verified byte for byte\n"
        "against the source, and it is fsynced and renamed into place: DST is complete or absent (with\n"
        "--force, the old or the new one at every instant: renameat2 RENAME_EXCHANGE; where the system\n"
        "lacks it, two renames, and a kill between them is undone by the next run). A run killed midway\n"
        "leaves a directory named after its process (pid, start time); the next run removes it and says so.\n"
        "Links out of SRC and special files are never read.\n"
        "compat_convert.json in DST records the source layout and trainer, how the layer ids were read\n"
        "and why, the layers trained on, and the compat version.\n\n"
        "Layouts:\n" + "\n".join(f"  {name:12} {module.DESCRIPTION}" for name, module in layouts.items())
    )


def add_arguments(parser) -> None:
    from compat import checkpoints
    from compat.checkpoints import RECORD_FILE
    from compat.convert import DEFAULT_MAX_SHARD
    from compat.safetensors_stream import CHECKSUM, CHECKSUMS, DTYPE_NAMES

    layouts = sorted(checkpoints.all_layouts())
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    ckpt = sub.add_parser("ckpt", prog="compat convert ckpt", help="a drafter checkpoint directory",
                          description=_ckpt_description(), epilog=CKPT_EPILOG,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    ckpt.set_defaults(_parser=ckpt)
    ckpt.add_argument("src", metavar="SRC", help="drafter directory: config.json + model.safetensors, "
                      "sharded safetensors with an index, or pytorch_model.bin (read with weights_only=True); "
                      "or a Hugging Face id in the local cache")
    ckpt.add_argument("dst", type=Path, metavar="DST", help="output directory (must not exist unless --force)")
    ckpt.add_argument("--to", required=True, choices=layouts, help="destination layout")
    ckpt.add_argument("--from", dest="source_layout", choices=layouts, help="source layout (default: detected)")
    from compat.commands._source import add_source_arguments

    add_source_arguments(ckpt, title="the release that will load DST (default: every known release)",
                         engine_help="{engines}: the installed one (with --python, the serving venv's); "
                         "vllm==0.20.0, 'sglang>=0.5.8,<0.6', vllm==latest: that release of the package index")
    ckpt.add_argument("--engine-version", metavar="X", help="deprecated: the same as --engine <the --to layout's "
                      "engine>==X, validated the same way")
    ckpt.add_argument("--target", metavar="PATH", help="the target model directory or its config.json (or a Hugging "
                      "Face id in the local cache): checks hidden size, vocab, layer ids and fc width, fills default "
                      "layer ids, and names the verifier in --to speculators")
    ckpt.add_argument("--layer-ids", metavar="IDS", nargs="+", help="the target layers the drafter was trained on "
                      "(e.g. 2 30 58 or 2,30,58), in --layer-ids-convention (default capture-before)")
    checkpoints.add_flag(ckpt, also=" (or --layer-ids)")
    ckpt.add_argument("--dtype", choices=sorted(DTYPE_NAMES), help="cast floating-point tensors (default: keep bytes)")
    ckpt.add_argument("--max-shard-size", default=DEFAULT_MAX_SHARD, metavar="SIZE",
                      help=f"split the output above this size (default {DEFAULT_MAX_SHARD})")
    ckpt.add_argument("--checksum", choices=CHECKSUMS, default=CHECKSUM, help="also record a per-tensor checksum "
                      f"of the written bytes in {RECORD_FILE} and the --json result (default {CHECKSUM}; sha256: digests "
                      "worth publishing). Verification does not depend on it: every tensor is always read back and "
                      "compared byte for byte with the source")
    ckpt.add_argument("--force", action="store_true", help="replace DST if it exists")
    ckpt.add_argument("--dry-run", action="store_true", help="print the plan; write nothing")
    ckpt.add_argument("--json", action="store_true", help="print the plan and the result as JSON (errors too)")


def _options(ns: argparse.Namespace):
    from compat.checkpoints import from_flag
    from compat.convert import Options
    from compat.core.errors import UsageError
    from compat.hub import resolve_model
    from compat.safetensors_stream import parse_size

    try:
        max_shard = parse_size(ns.max_shard_size)
    except ValueError as exc:
        raise UsageError(f"--max-shard-size: {exc}") from None
    layer_ids = None
    if ns.layer_ids:
        try:
            layer_ids = [int(part) for item in ns.layer_ids for part in item.split(",") if part.strip()]
        except ValueError:
            raise UsageError(f"--layer-ids {' '.join(ns.layer_ids)}: not integers", hint="e.g. --layer-ids 2 30 58") from None
    target = resolve_model(ns.target, what="target") if ns.target else None
    src = resolve_model(ns.src, what="SRC")
    from compat.model_kind import looks_like_drafter, looks_like_target, swapped

    if swapped(target, src) or (target is None and looks_like_target(src) and not looks_like_drafter(src)):
        said = (f"SRC and --target look swapped: {ns.src} is a target model, {ns.target} a drafter" if target is not None
                else f"SRC {ns.src} is a target model (a deep model's config, no drafter weights): convert takes the drafter")
        raise UsageError(said, hint=f"compat convert ckpt {ns.target} {ns.dst} --to {ns.to} --target {ns.src} ..."
                         if target is not None else f"compat convert ckpt DRAFTER {ns.dst} --to {ns.to} --target {ns.src}")
    from compat.convert import check_source

    check_source(src)
    version, where = release_of(ns)  # after the inputs: looking for the engine or fetching a release is the slow part
    return Options(src=src, dst=ns.dst, to=ns.to, source_layout=ns.source_layout,
                   engine_version=version, engine_source=where, target=target, layer_ids=layer_ids,
                   convention=from_flag(ns.layer_ids_convention), dtype=ns.dtype, max_shard_size=max_shard, force=ns.force,
                   checksum=ns.checksum)


def release_of(ns: argparse.Namespace) -> tuple[str | None, str | None]:
    """(version, where it was read) of the release the source options name; (None, None): every known release."""
    from compat.commands._source import release_version
    from compat.checkpoints import engine_of
    from compat.core.errors import RefusedError, UsageError

    layout_engine = engine_of(ns.to)
    if ns.engine_version is not None:
        ns = _from_engine_version(ns, layout_engine)
    elif ns.python and not ns.engine:
        raise UsageError(f"--python names the serving venv of an installed engine: give --engine {engines.choices_text()} too",
                         hint=f"--engine {layout_engine or engines.names()[0]} --python {ns.python}")
    if not ns.engine and not ns.path:
        return None, None
    engine, version, _, where = release_version(ns, layout_engine)
    if not version:
        raise RefusedError(f"cannot tell which {engine} release {where.removeprefix('the tree ')} is",
                           hint=f"name the release instead: --engine {engine}==X.Y.Z")
    return version, f"{engine} {version}, {where}"


def _from_engine_version(ns: argparse.Namespace, layout_engine: str | None) -> argparse.Namespace:
    """--engine-version X, the older spelling: --engine <the layout's engine>==X."""
    from packaging.version import InvalidVersion, Version

    from compat.core.errors import UsageError

    if ns.engine or ns.path or ns.python:
        raise UsageError("--engine-version is the older spelling of --engine ENGINE==X: give one of them",
                         hint=f"--engine {layout_engine or engines.names()[0]}=={ns.engine_version}")
    try:
        Version(ns.engine_version)
    except InvalidVersion:
        raise UsageError(f"--engine-version {ns.engine_version!r} is not a release number",
                         hint="e.g. --engine vllm==0.20.0 (or --engine vllm==latest)") from None
    if layout_engine is None:
        raise UsageError(f"--engine-version {ns.engine_version}: the {ns.to} layout is not one engine's, so the "
                         "version does not say which engine", hint=f"--engine vllm=={ns.engine_version} or --engine sglang=={ns.engine_version}")
    return argparse.Namespace(**{**vars(ns), "engine": f"{layout_engine}=={ns.engine_version}", "engine_version": None})


def run(args, console) -> int:
    from compat.core.console import show_progress
    from compat.convert import execute, make_plan
    from compat.core.errors import EXIT_OK
    from compat.core.output import print_json

    options = _options(args)
    recovered = _recover(args)
    if _is_block_drafter(options.src):
        return _run_blocks(args, options, recovered, console)
    plan = make_plan(options)
    say = _say(console)
    if args.dry_run:
        if args.json:
            print_json({"dry_run": True, "recovered": recovered, "plan": plan.to_json()}, "convert")
        else:
            _print_plan(plan, dry_run=True, say=say)
        return EXIT_OK
    if not args.json:
        _print_plan(plan, dry_run=False, say=say)
    result = execute(plan, progress=show_progress(args))
    if args.json:
        print_json({"dry_run": False, "recovered": recovered, "plan": plan.to_json(), "result": result.to_json()}, "convert")
    else:
        say(f"wrote {result.dst} ({', '.join(result.files)}; {_size(result.bytes_written)}); "
            f"verified {plural(len(result.tensors), 'tensor')} byte for byte against the source")
        for note in result.notes:
            say(f"note: {note}")
    return EXIT_OK


def _is_block_drafter(src: Path) -> bool:
    """A DFlash or DSpark drafter: its files are copied and its config rewritten (compat/convert/blocks.py)."""
    from compat.convert.blocks import block_family
    from compat.core.errors import CompatError
    from compat.core.files import input_roots, read_json

    try:  # regular files inside SRC only, bounded: a FIFO or /dev/zero is refused at once (compat/core/files.py)
        config = read_json(src / "config.json", input_roots(src), "a drafter config.json")
    except (OSError, ValueError, CompatError):
        return False  # make_plan says what is wrong with SRC
    return isinstance(config, dict) and block_family(config, set()) is not None


def _run_blocks(args, options, recovered: list[str], console) -> int:
    """A block drafter for a named release: its readers come from the release's probe, the target's layers from --target."""
    from compat.commands._source import tree_from_args
    from compat.convert.blocks import execute_blocks, plan_blocks
    from compat.core.console import show_progress
    from compat.core.errors import EXIT_OK, UsageError
    from compat.core.output import print_json
    from compat.report import build_report
    from compat.target import read_target

    if not (args.engine or args.path) or options.target is None:
        raise UsageError("a DFlash or DSpark drafter is converted for one release and one target: give --engine "
                         "ENGINE==X (or --path DIR) and --target", hint="compat doctor prints the command")
    report = build_report(tree_from_args(args, progress=show_progress(args)))
    plan = plan_blocks(options.src, options.dst.expanduser().absolute(), report, read_target(options.target), force=args.force)
    say = _say(console)
    if not args.json:
        say(f"{'plan (dry run, nothing written)' if args.dry_run else 'plan'}: {plan.src} [{plan.layout}, {plan.family}] -> "
            f"{plan.dst} [{plan.engine} {plan.engine_version}]")
        say(f"files copied byte for byte: {', '.join(plan.files)}")
        for line in plan.rewrite.why or ["config.json unchanged: this release already reads it as trained"]:
            say(f"config.json: {line}")
    if args.dry_run:
        if args.json:
            print_json({"dry_run": True, "recovered": recovered, "plan": plan.to_json()}, "convert")
        return EXIT_OK
    result = execute_blocks(plan)
    if args.json:
        print_json({"dry_run": False, "recovered": recovered, "plan": plan.to_json(), "result": result}, "convert")
    else:
        say(f"wrote {result['dst']} ({', '.join(result['files'])}); verified {plural(result['verified'], 'file')} (sha256) against the source")
    return EXIT_OK


def _say(console):
    """Plain lines on stdout (no markup: names hold brackets), silenced by -qq like every console."""
    def say(text: str) -> None:
        console.out(text, highlight=False)

    return say


def _recover(args) -> list[str]:
    """Clean up after killed runs on this DST (a dry run only says what it would do)."""
    import sys

    from compat.convert import recover_leftovers
    from compat.core.errors import UsageError
    from compat.core.files import refuse_os_error

    dst = args.dst.expanduser().absolute()
    if not dst.parent.is_dir():
        raise UsageError(f"the parent of DST, {dst.parent}, does not exist")
    try:
        messages = recover_leftovers(dst, dry_run=args.dry_run)
    except OSError as exc:
        raise refuse_os_error(exc, dst.parent, "cleaning up after an earlier run") from None
    for message in messages:  # stderr in every mode: --json keeps stdout for the document (which lists them too)
        print(f"recovery: {message}", file=sys.stderr)
    return messages


def _size(n: float) -> str:
    from compat.core.output import human_size

    return human_size(n)


def _print_plan(plan, dry_run: bool, say=print) -> None:
    release = f", {plan.engine} {plan.engine_version or '(every known release)'}" if plan.engine else ""
    say(f"{'plan (dry run, nothing written)' if dry_run else 'plan'}: {plan.src} [{plan.source_layout}, {plan.source_kind}] "
        f"-> {plan.dst} [{plan.dest_layout}{release}]")
    if plan.engine_source:
        say(f"release: {plan.engine_source}")
    say("tensors:")
    for t in plan.tensors:
        arrow = f"{t.source_name or '(derived)'} -> {t.dest_name or '(dropped)'}"
        dtype = t.dtype if t.dtype == t.out_dtype else f"{t.dtype} -> {t.out_dtype}"
        say(f"  {arrow:70} {dtype:12} {list(t.shape)}  {t.action}")
    say("config.json changes:")
    for key, change in plan.config_changes().items():
        say(f"  {key}: {json.dumps(change['from'])} -> {json.dumps(change['to'])}")
    ids = plan.layer_ids
    say("layer ids:")
    say(f"  trained on (capture-before): {ids['capture_before'] if ids['capture_before'] is not None else 'engine default'}")
    say(f"  from: {ids['origin']}")
    for key, value in ids["written"].items():
        say(f"  written: {key} = {value}")
    if plan.notes:
        say("notes:")
        for note in plan.notes:
            say(f"  - {note}")
    say("output: " + ", ".join(f"{name} ({_size(sum(t.out_nbytes for t in items))})" for name, items in plan.shards))
