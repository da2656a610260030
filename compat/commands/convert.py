"""`compat convert ckpt SRC DST --to LAYOUT`: rewrite a drafter checkpoint into the layout a release loads.

The work (open, plan, copy, verify, swap) is the compat/convert/ package with the layouts of
checkpoints/; this file is the command line and what it prints. Before planning, what killed runs
left beside DST is cleaned up (their owner process is gone) and said so.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "convert"
ORDER = 30
SUMMARY = "rewrite a drafter checkpoint into the layout an engine release loads"
DESCRIPTION = "compat convert ckpt SRC DST --to vllm|sglang|speculators|eagle|mla ... ('compat convert ckpt --help' for the options)"
EPILOG = ""

CKPT_EPILOG = (
    "Layer ids. capture-before i = the residual stream entering target layer i (HF hidden_states[i];\n"
    "vLLM and speculators). output-of j = the output of target layer j = capture-before j + 1\n"
    "(SpecForge, AngelSlim, ModelOpt HF training). SGLang adds +1 to declared ids (for DeepSeek/Kimi\n"
    "targets from 0.5.13 only when the first id is 1).\n\n"
    "Examples:\n"
    "  compat convert ckpt ./kimi-eagle3 ./kimi-eagle3-vllm --to vllm --engine-version 0.20.0 --target ./Kimi-K2\n"
    "  compat convert ckpt ./drafter ./drafter-sglang --to sglang --engine-version 0.5.8 --dry-run\n\n"
    "Exit codes: 0 ok, 1 verification failed, 2 usage, 4 refused (bad input, DST exists, a disk error;\n"
    "nothing changed), 130 interrupted (SIGINT, SIGTERM or SIGHUP; the partial output is removed)."
)


def _ckpt_description() -> str:
    from compat import checkpoints

    layouts = checkpoints.all_layouts()
    return (
        "Rewrite an EAGLE-3 drafter checkpoint into the layout an engine release loads.\n\n"
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
    from compat.checkpoints import CONVENTIONS, RECORD_FILE
    from compat.convert import DEFAULT_MAX_SHARD
    from compat.safetensors_stream import CHECKSUM, CHECKSUMS, DTYPE_NAMES

    layouts = sorted(checkpoints.all_layouts())
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    ckpt = sub.add_parser("ckpt", prog="compat convert ckpt", help="a drafter checkpoint directory",
                          description=_ckpt_description(), epilog=CKPT_EPILOG,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    ckpt.set_defaults(_parser=ckpt)
    ckpt.add_argument("src", type=Path, metavar="SRC", help="drafter directory: config.json + model.safetensors, "
                      "sharded safetensors with an index, or pytorch_model.bin (read with weights_only=True)")
    ckpt.add_argument("dst", type=Path, metavar="DST", help="output directory (must not exist unless --force)")
    ckpt.add_argument("--to", required=True, choices=layouts, help="destination layout")
    ckpt.add_argument("--from", dest="source_layout", choices=layouts, help="source layout (default: detected)")
    ckpt.add_argument("--engine-version", metavar="X", help="the vLLM or SGLang release that will load DST (default: "
                      "write what every known release loads, refusing when no single spelling does)")
    ckpt.add_argument("--target", type=Path, metavar="PATH", help="the target model directory or its config.json: "
                      "checks hidden size, vocab, layer ids and fc width, and fills default layer ids")
    ckpt.add_argument("--layer-ids", metavar="IDS", nargs="+", help="the target layers the drafter was trained on "
                      "(e.g. 2 30 58 or 2,30,58), in --layer-ids-convention (default capture-before)")
    ckpt.add_argument("--layer-ids-convention", choices=CONVENTIONS, help="the convention of the source's declared ids "
                      "(or of --layer-ids); required when the source cannot tell")
    ckpt.add_argument("--dtype", choices=sorted(DTYPE_NAMES), help="cast floating-point tensors (default: keep bytes)")
    ckpt.add_argument("--max-shard-size", default=DEFAULT_MAX_SHARD, metavar="SIZE",
                      help=f"split the output above this size (default {DEFAULT_MAX_SHARD})")
    ckpt.add_argument("--checksum", choices=CHECKSUMS, default=CHECKSUM, help="also record a per-tensor checksum "
                      f"of the written bytes in {RECORD_FILE} and the --json result (default {CHECKSUM}; sha256: digests "
                      "worth publishing). Verification does not depend on it: every tensor is always read back and "
                      "compared byte for byte with the source")
    ckpt.add_argument("--force", action="store_true", help="replace DST if it exists")
    ckpt.add_argument("--dry-run", action="store_true", help="print the plan; write nothing")
    ckpt.add_argument("--json", action="store_true", help="print the plan and the result as JSON")


def _options(ns: argparse.Namespace):
    from compat.convert import Options
    from compat.errors import UsageError
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
    return Options(src=ns.src, dst=ns.dst, to=ns.to, source_layout=ns.source_layout, engine_version=ns.engine_version,
                   target=ns.target, layer_ids=layer_ids, layer_ids_convention=ns.layer_ids_convention, dtype=ns.dtype,
                   max_shard_size=max_shard, force=ns.force, checksum=ns.checksum)


def run(args, console) -> int:
    from compat.convert import execute, make_plan
    from compat.errors import EXIT_OK
    from compat.output import print_json

    recovered = _recover(args)
    plan = make_plan(_options(args))
    if args.dry_run:
        if args.json:
            print_json({"dry_run": True, "recovered": recovered, "plan": plan.to_json()}, "convert")
        else:
            _print_plan(plan, dry_run=True)
        return EXIT_OK
    if not args.json:
        _print_plan(plan, dry_run=False)
    result = execute(plan, progress=True)
    if args.json:
        print_json({"dry_run": False, "recovered": recovered, "plan": plan.to_json(), "result": result.to_json()}, "convert")
    else:
        print(f"wrote {result.dst} ({', '.join(result.files)}; {_size(result.bytes_written)}); "
              f"verified {len(result.tensors)} tensors byte for byte against the source")
        for note in result.notes:
            print(f"note: {note}")
    return EXIT_OK


def _recover(args) -> list[str]:
    """Clean up after killed runs on this DST (a dry run only says what it would do)."""
    import sys

    from compat.convert import recover_leftovers
    from compat.errors import UsageError
    from compat.files import refuse_os_error

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
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return str(n)


def _print_plan(plan, dry_run: bool) -> None:
    release = f", {plan.engine} {plan.engine_version or '(every known release)'}" if plan.engine else ""
    print(f"{'plan (dry run, nothing written)' if dry_run else 'plan'}: {plan.src} [{plan.source_layout}, {plan.source_kind}] "
          f"-> {plan.dst} [{plan.dest_layout}{release}]")
    print("tensors:")
    for t in plan.tensors:
        arrow = f"{t.source_name or '(derived)'} -> {t.dest_name or '(dropped)'}"
        dtype = t.dtype if t.dtype == t.out_dtype else f"{t.dtype} -> {t.out_dtype}"
        print(f"  {arrow:70} {dtype:12} {list(t.shape)}  {t.action}")
    print("config.json changes:")
    for key, change in plan.config_changes().items():
        print(f"  {key}: {json.dumps(change['from'])} -> {json.dumps(change['to'])}")
    ids = plan.layer_ids
    print("layer ids:")
    print(f"  trained on (capture-before): {ids['capture_before'] if ids['capture_before'] is not None else 'engine default'}")
    print(f"  from: {ids['origin']}")
    for key, value in ids["written"].items():
        print(f"  written: {key} = {value}")
    if plan.notes:
        print("notes:")
        for note in plan.notes:
            print(f"  - {note}")
    print("output: " + ", ".join(f"{name} ({_size(sum(t.out_nbytes for t in items))})" for name, items in plan.shards))
