"""Fixes for failing checks, verified before they are offered (never guessed).

A check that cannot decide without an answer from the user (`needs_input`: the drafter's ids do
not say their convention, or it declares none and nothing says which layers it was trained on) gets
an "ask" fix first: each possible answer, what it means, and the fix that answer would need. Otherwise each check says in its `@check(..., fixes=...)` which
kinds may fix it, tried in this order:
- "patch": the release's patches applied to an in-memory overlay of the tree, one after another;
  the check runs again on the re-probed overlay and the first patch set that makes it pass is offered;
- "convert": the conversion to the release's layout is planned (nothing written) and the check runs
  again on the drafter that plan would write;
- "release": a release the curated known issues name as fixing it;
otherwise the fix says plainly that nothing here fixes it.
"""

from __future__ import annotations

from dataclasses import replace

import os
import shlex
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from compat.checkpoints import (BASIS_COMMAND_LINE, CONVENTION_FLAG, CONVENTIONS, LAYER_IDS_FLAG, RECORD_KEY,
                                ConventionNeeded, Settled, default_layer_ids, from_flag)
from compat import engines
from compat.checks import FAIL, PASS, ConvertWith, Ctx, Drafter, Result, get_check
from compat.convert.blocks import BLOCK_FAMILIES
from compat.core.errors import CompatError
from compat.doctor import reuse
from compat.doctor.inputs import recognise
from compat.fix import AskFix, ConvertFix, LineFix, NoFix, PatchFix, ReleaseFix
from compat.hub import local_name, model_name
from compat.core.tree import EngineTree

if TYPE_CHECKING:
    from compat.convert.plan import PlannedTensor
    from compat.patches import Patch


def unfixed(checks: list[Result]) -> list[Result]:
    return [c for c in checks if c.verdict == FAIL and c.fix is None]


def may_fix(check: Result, kind: str) -> bool:
    return kind in get_check(check.check).fixes


def rerun(check: Result, ctx: Ctx) -> Result:
    return reuse.run(get_check(check.check), ctx)


# -- the user's launch line, changed -------------------------------------------------------------------------
def fix_with_line(ctx: Ctx, checks: list[Result]) -> None:
    """doctor --launch: a failing check whose line edits make it pass (the check run again on the changed line)
    is fixed by the line doctor prints."""
    from compat.launch_line import fixed_words, read_line

    line = ctx.options.launch
    if line is None:
        fix_with_method(ctx, checks)
        return
    for check in unfixed(checks):
        if not check.edits or not may_fix(check, "line"):
            continue
        changed = read_line(fixed_words(line, list(check.edits)))
        again = rerun(check, ctx.with_options(replace(ctx.options, launch=changed)))
        if again.verdict != FAIL:
            check.fix = LineFix("the launch line below: " + "; ".join(e.why for e in check.edits))


def fix_with_method(ctx: Ctx, checks: list[Result]) -> None:
    """doctor --method NAME, without a line: a failing check whose edit runs the method under another name (vLLM
    0.10.0's 'deepseek_mtp' for 'mtp', SGLang's EAGLE3 for EAGLE with an EAGLE-3 drafter) is fixed by the launch
    command doctor prints, which uses that name, when the check passes under it."""
    if ctx.options.method is None:
        return
    for check in unfixed(checks):
        method_option = engines.get(ctx.engine).setting_option("method")  # the flag form's (--speculative-algorithm)
        renames = [e for e in check.edits if e.key == "method" or (method_option and e.option == method_option)]
        if not renames or not may_fix(check, "line"):
            continue
        name = renames[-1].value
        again = rerun(check, ctx.with_options(replace(ctx.options, method=name)))
        if again.verdict != FAIL:
            check.fix = LineFix(f"the launch command below runs {name!r}, not --method {ctx.options.method}: "
                                + renames[-1].why)


# -- an answer only the user has ----------------------------------------------------------------------------
def fix_with_input(ctx: Ctx, checks: list[Result]) -> None:
    """For a check only the user can settle: what each answer means here, and its fix. Two questions: the
    convention of declared ids (--layer-ids-convention), and, for a drafter that declares none, the layers
    it was trained on (--layer-ids)."""
    for check in unfixed(checks):
        if not check.needs_input:
            continue
        settled = ctx.drafter.settled
        if settled is not None and settled.source == "default" and ctx.target.num_hidden_layers:
            check.fix = _ask_layers(ctx, check, default_layer_ids(ctx.target.num_hidden_layers))
            continue
        answers = {}
        for convention in CONVENTIONS:
            drafter = recognise(Drafter(ctx.drafter.path, dict(ctx.drafter.config), dict(ctx.drafter.tensors)),
                                ctx.target, convention)
            answer_ctx = ctx.with_drafter(drafter)
            again = rerun(check, answer_ctx)
            answer: dict[str, Any] = {"trained": drafter.trained_ids, "verdict": again.verdict, "fix": None}
            if again.verdict == FAIL:
                converted, _ = converted_drafter(answer_ctx, from_flag(convention))
                if converted is not None and rerun(check, ctx.with_drafter(converted)).verdict == PASS:
                    answer["fix"] = convert_command(answer_ctx, convention)
            answers[convention] = answer
        text = f"say how the drafter was trained: {CONVENTION_FLAG} " + " or ".join(
            f"{conv} ({'the layers match' if a['verdict'] == PASS else 'then: ' + (a['fix'] or 'no conversion fixes it')})"
            for conv, a in answers.items())
        check.fix = AskFix(text, question="convention", flag=CONVENTION_FLAG, answers=answers)


def _ask_layers(ctx: Ctx, check: Result, default: list[int]) -> AskFix:
    """A drafter that declares no ids: were they the trainers' default (what every release feeds it), or others?"""
    drafter = recognise(Drafter(ctx.drafter.path, dict(ctx.drafter.config), dict(ctx.drafter.tensors)), ctx.target,
                        layer_ids=default)
    answer_ctx = ctx.with_drafter(drafter)
    again = rerun(check, answer_ctx)
    said = f"{LAYER_IDS_FLAG} {' '.join(map(str, default))}"
    answer: dict[str, Any] = {"trained": default, "verdict": again.verdict, "fix": None}
    if again.verdict == FAIL:
        converted, _ = converted_drafter(answer_ctx, layer_ids=default)
        if converted is not None and rerun(check, ctx.with_drafter(converted)).verdict == PASS:
            answer["fix"] = convert_command(answer_ctx, layer_ids=default)
    other = "then: " + convert_command(ctx, layer_ids="IDS") + " writes them where this release reads them"
    text = (f"say which layers the drafter was trained on: {said} (the trainers' default: "
            + ("the layers match" if answer["verdict"] == PASS else "then: " + (answer["fix"] or "no conversion fixes it"))
            + f") or {LAYER_IDS_FLAG} IDS with the layers it was trained on ({other})")
    return AskFix(text, question="layers", flag=LAYER_IDS_FLAG,
                  answers={"default": answer, "other": {"trained": None, "verdict": None, "fix": other}})


# -- patches ------------------------------------------------------------------------------------------------
def fix_with_patches(tree: EngineTree, ctx: Ctx, checks: list[Result]) -> None:
    """Apply the release's patches in memory, one after another (each on top of the ones before), and
    re-run the checks a patch may fix after each; a check whose answer ends up PASS gets the patch with
    which it last turned PASS. Checks that warn are followed too: a patch that gives a target its
    capture hook can expose a layer-id problem only a later patch fixes."""
    from compat.report import build_report

    if any("patch" in get_check(c.check).blocks for c in checks if c.verdict == FAIL):
        return  # e.g. the release does not know the target's architecture: no patch can help
    followed = [c for c in checks if may_fix(c, "patch") and c.verdict != PASS
                and (c.fix is None or isinstance(c.fix, ConvertFix))]
    if not any(c.verdict == FAIL for c in followed):
        return
    patches = applicable_patches(ctx.engine, tree.version)
    current, applied, chosen = tree, [], {}
    last = {c.check: c.verdict for c in followed}
    turned_pass: dict[str, tuple[Patch, Result]] = {}
    row = reuse.active()
    for patch in patches:
        options = patch_options(ctx, patch)

        def overlaid(tree: EngineTree = current, patch: Patch = patch, options: dict[str, Any] = options
                     ) -> tuple[EngineTree, dict[str, Any]] | None:
            changes = apply_in_memory(patch, tree, options)
            if not changes:
                return None
            view = tree.overlay(changes)
            return view, build_report(view)

        made = row.overlay(current, patch.id, options, overlaid) if row is not None else overlaid()
        if made is None:
            continue
        current, report = made
        applied.append(patch.id)
        chosen[patch.id] = options
        patched = ctx.with_report(report)
        for check in followed:
            again = rerun(check, patched)
            if again.verdict == PASS and last[check.check] != PASS:
                turned_pass[check.check] = (patch, again)
            elif again.verdict != PASS:
                turned_pass.pop(check.check, None)
            last[check.check] = again.verdict
    for check in followed:
        if check.check not in turned_pass:
            continue
        patch, again = turned_pass[check.check]
        ids = with_requirements(patch, patches, applied)
        settings = {pid: chosen[pid] for pid in ids if chosen.get(pid)}
        fix = PatchFix.verified_by_doctor(ctx.release, ids, settings,
                                          f"re-probed with the patches applied in memory: {again.detail}",
                                          note=where_to_patch(ctx))
        if isinstance(check.fix, ConvertFix):  # converting the drafter fixes it already: the patch is the other way
            check.fix = replace(check.fix, alternative=fix)
        else:
            check.fix = fix


def patch_options(ctx: Ctx, patch: Patch) -> dict[str, Any]:
    """The options beyond the patch's defaults this target and drafter need: what the patch's own
    `options_for_target` hook asks for (a whitelist adds the target's model_type), and the drafter's
    settled layer-id convention for a patch that reads nested ids."""
    options = patch.options_for_target(ctx.target.model_type, ctx.target.architecture)
    default = patch.options.get("nested_ids_convention")
    if default is not None and ctx.drafter.convention and ctx.drafter.convention != default:
        options["nested_ids_convention"] = ctx.drafter.convention
    return options


def applicable_patches(engine: str, version: str | None) -> list[Patch]:
    """The engine's patches offered for `version`, as their catalog says (their code, libcst's half a second to
    import, is imported only when a patch must be planned: its answer on the tree is not in the facts cache)."""
    from compat.patches import catalog

    return [p for p in catalog(engine) if p.applies_to(version)]


def apply_in_memory(patch: Patch, tree: EngineTree, options: dict[str, Any]) -> dict[str, bytes]:
    """The files `compat patch` would change for this one patch (relpath -> new bytes), planned on the
    tree (an overlay of the patches before it) by patching's own plan, compile check included; {} when
    it changes nothing or refuses. Kept in the facts cache per tree content, patch and options (a release
    is immutable, and the libcst transforms are most of a warm doctor's time)."""
    from compat import facts

    inputs = {"patch": patch.id, "options": {k: list(v) if isinstance(v, tuple) else v for k, v in options.items()}}
    found = facts.memo(tree, "in-memory-patch", inputs, lambda: _planned(patch, tree, options), code=("compat.patches",))
    return {relpath: text.encode() for relpath, text in (found.get("changes") or {}).items()}


def _planned(patch: Patch, tree: EngineTree, options: dict[str, Any]) -> dict[str, Any]:
    from compat.patching import APPLY, plan

    try:
        item = plan(tree, select=[patch.id], options=options)[0]
    except Exception as err:  # noqa: BLE001 - a patch that cannot plan on this release is not offered as its fix
        return {"refused": f"{type(err).__name__}: {err}"}
    if item.state != APPLY:
        return {"state": item.state, "reason": item.reason}
    return {"changes": {e.relpath: e.after.decode("utf-8") for e in item.edits}}


def with_requirements(patch: Patch, patches: list[Patch], applied: list[str]) -> list[str]:
    by_id = {p.id: p for p in patches}
    ids, todo = [], [patch.id]
    while todo:
        pid = todo.pop()
        if pid in ids or pid not in applied:
            continue
        ids.append(pid)
        todo.extend(by_id[pid].requires)
    return sorted(ids, key=applied.index)


def where_to_patch(ctx: Ctx) -> str | None:
    """A note for fixes that patch a released tree's engine without knowing the serving venv."""
    src = ctx.report.get("source") or {}
    if src.get("kind") == "released" and not ctx.options.fixes_python:
        return (f"run it with the python of the venv that serves {ctx.engine} {ctx.report.get('version')}, "
                "or give doctor --python PATH to name it")
    return None


# -- conversion ---------------------------------------------------------------------------------------------
def fix_with_conversion(ctx: Ctx, checks: list[Result], *, first_only: bool = False) -> None:
    """Plan `compat convert ckpt --to <engine> --engine-version X` (nothing written) and re-check the result.

    first_only: only the checks that list "convert" first among their fixes (before any patch is tried)."""
    pending = [c for c in unfixed(checks) if may_fix(c, "convert")
               and (not first_only or get_check(c.check).fixes[0] == "convert")]
    if not pending or ctx.version is None:
        return
    attempts: dict[str | None, tuple[Drafter | None, CompatError | None]] = {None: converted_drafter(ctx)}
    if isinstance(attempts[None][1], ConventionNeeded):
        # the drafter does not say how to read its ids; a fix that holds under either reading is still a fix
        attempts = {conv: converted_drafter(ctx, from_flag(conv)) for conv in CONVENTIONS}
    refused = next((err for drafter, err in attempts.values() if drafter is None and err is not None), None)
    if refused is not None:
        for check in pending:
            check.convert_refused = one_line(refused)
        return
    for check in pending:
        if check.convert_with is not None:  # the check knows what the conversion must change (e.g. the layer ids)
            _fix_with_conversion_of(ctx, check, check.convert_with)
            continue
        agains = [rerun(check, ctx.with_drafter(drafter)) for drafter, _ in attempts.values() if drafter is not None]
        if all(again.verdict == PASS for again in agains):
            conventions = [c for c in attempts if c]
            note = ("the drafter's config does not say which convention its layer ids use: pass the one it was "
                    "trained with") if conventions else None
            check.fix = ConvertFix(convert_command(ctx, "|".join(conventions) or None),
                                   f"checked on the drafter the conversion would write: {agains[0].detail}", note)


def _fix_with_conversion_of(ctx: Ctx, check: Result, changes: ConvertWith) -> None:
    drafter, error = converted_drafter(ctx, layer_ids=changes.layer_ids)
    if drafter is None:
        check.convert_refused = one_line(error)
        return
    again = rerun(check, ctx.with_drafter(drafter))
    if again.verdict == PASS:
        check.fix = ConvertFix(convert_command(ctx, layer_ids=changes.layer_ids),
                               f"checked on the drafter the conversion would write: {again.detail}")


def converted_drafter(ctx: Ctx, told: Settled | None = None,
                      layer_ids: list[int] | None = None) -> tuple[Drafter | None, CompatError | None]:
    """The drafter `compat convert ckpt` would write for this release (planned, nothing written), or why it refuses.

    The conversion reads the source's ids as doctor settled them (`ctx.drafter.settled`), or as `told`
    (an answer the user may give: --layer-ids-convention X). Planned once per drafter, target and answer within a
    release's row (compat/doctor/reuse.py: its diagnosis and its readings ask for the same plans)."""
    row = reuse.active()
    if row is None:
        return _converted_drafter(ctx, told, layer_ids)
    key = ("converted", id(ctx.drafter), id(ctx.target), id(ctx.report), id(ctx.options), repr(told), repr(layer_ids))
    return row.remember(key, (ctx.drafter, ctx.target, ctx.report, ctx.options),
                        lambda: _converted_drafter(ctx, told, layer_ids))


def _converted_drafter(ctx: Ctx, told: Settled | None,
                       layer_ids: list[int] | None) -> tuple[Drafter | None, CompatError | None]:
    from compat.convert import Options as ConvertOptions
    from compat.convert import build_record, make_plan

    if ctx.method.family in BLOCK_FAMILIES:
        return _converted_block_drafter(ctx)
    target_config = ctx.target.path / "config.json"
    layer_ids = layer_ids if layer_ids is not None else told_ids(ctx.drafter.settled)
    # DST is never created (make_plan only plans): a name no one has, in a folder that exists
    dst = Path(tempfile.gettempdir()) / f"compat-doctor-{os.getpid()}-{os.urandom(8).hex()}"
    try:
        plan = make_plan(ConvertOptions(src=ctx.drafter.path, dst=dst, to=ctx.engine, engine_version=str(ctx.version),
                                        target=target_config if target_config.is_file() else None,
                                        layer_ids=layer_ids, convention=told or ctx.drafter.settled))
    except CompatError as err:
        return None, err
    tensors = {t.dest_name: (t.out_dtype, tuple(t.shape)) for t in plan.tensors if t.dest_name}
    config = {**plan.config_after, RECORD_KEY: build_record(plan)}  # what the conversion's record will say
    maps = {t.dest_name: PlannedMap(t) for t in plan.tensors if t.dest_name in ("d2t", "t2d")}
    converted = Drafter(Path(converted_path(ctx)), config, tensors, maps=maps)
    return recognise(converted, ctx.target), None


def _converted_block_drafter(ctx: Ctx) -> tuple[Drafter | None, CompatError | None]:
    """The DFlash/DSpark drafter `compat convert ckpt` would write (compat/convert/blocks.py: the same rewrite)."""
    from compat.block_drafters import CannotRewrite, release_member, rewrite

    try:
        changed = rewrite(ctx.report, ctx.drafter.config, ctx.drafter.recognised, ctx.target,
                          release_member(ctx.report, ctx.method.family))
    except CannotRewrite as err:
        return None, CompatError(f"the conversion cannot make them agree: {err}")
    config = {**changed.config, RECORD_KEY: changed.record}
    return recognise(Drafter(Path(converted_path(ctx)), config, dict(ctx.drafter.tensors)), ctx.target), None


def told_ids(settled: Settled | None) -> list[int] | None:
    """The layers the user gave doctor with --layer-ids (as written, in their convention), which a conversion must
    be given too: the drafter does not hold them."""
    ids = settled.ids if settled is not None else None
    return list(ids.declared) if ids is not None and ids.basis == BASIS_COMMAND_LINE and ids.declared else None


def one_line(error: CompatError | None) -> str | None:
    """An error as one line of a fix's text (its message and its fix)."""
    return None if error is None else str(error).replace("\n", " ")


class PlannedMap:
    """A vocab map as the planned conversion will write it: its bytes read from the plan's source."""

    def __init__(self, planned: PlannedTensor) -> None:
        assert planned.source is not None  # a map is copied or derived, never dropped
        self.dtype, self.shape, self._source = planned.out_dtype, tuple(planned.shape), planned.source

    def read(self) -> bytes:
        return b"".join(bytes(chunk) for chunk in self._source.chunks())


def converted_path(ctx: Ctx) -> str:
    """DST beside the drafter; for a drafter from the Hugging Face cache, in the working directory."""
    return local_name(ctx.drafter.path) + f"-{ctx.engine}-{ctx.version}"


def named_convention(settled: Settled | None, layer_ids: list[int] | str | None) -> str | None:
    """The --layer-ids-convention a convert command must repeat: the one the user told doctor, and with explicit
    --layer-ids the one the drafter's ids were read in (told, or fixed by a trainer fingerprint)."""
    if settled is None or not (settled.source == "flag" or layer_ids is not None):
        return None
    return settled.convention


def convert_command(ctx: Ctx, convention: str | None = None, layer_ids: list[int] | str | None = None) -> str:
    """`compat convert ckpt` for the release diagnosed, named with the source options that name it: a tree by
    --path, the installed engine by --engine (and --python), a release by --engine ENGINE==VERSION."""
    layer_ids = layer_ids if layer_ids is not None else told_ids(ctx.drafter.settled)
    convention = convention or named_convention(ctx.drafter.settled, layer_ids)
    parts = ["compat", "convert", "ckpt", model_name(ctx.drafter.path), converted_path(ctx), "--to", ctx.engine,
             *ctx.release.args("convert"), "--target", model_name(ctx.target.path)]
    if layer_ids is not None:  # the layers, or a word standing for them (IDS: the user's to fill in)
        parts += ["--layer-ids", layer_ids if isinstance(layer_ids, str) else ",".join(str(i) for i in layer_ids)]
    return shlex.join(parts) + (f" --layer-ids-convention {convention}" if convention else "")


# -- a release that works -------------------------------------------------------------------------------------
def fix_with_release(ctx: Ctx, checks: list[Result]) -> None:
    """No patch or conversion helps: name the release the known issues say fixes it, if any."""
    from compat.known_issues import matching

    # only issues about this target family: one about every target (a method default, ...) fixes no target check
    issues = [i for i in matching(ctx.engine, str(ctx.version) if ctx.version else None, ctx.target.names)
              if i.get("fixed_in") and "*" not in i["applies_to"]]
    for check in unfixed(checks):
        if may_fix(check, "release") and check.release is not None and check.release.first:
            check.fix = ReleaseFix(str(check.release.specifier), f"{ctx.engine} >= {check.release.first}")
        elif may_fix(check, "release") and (about := [i for i in issues if check.check in i.get("checks", ())]) \
                and not (check.release is not None and check.release.none_later):
            best = max(about, key=lambda i: Version(i["fixed_in"]))
            check.fix = ReleaseFix(f">={best['fixed_in']}", f"{ctx.engine} >= {best['fixed_in']} ({best['link']})")
        elif check.remedy:
            check.fix = NoFix(check.remedy)
        else:
            hint = check.convert_refused
            later = ctx.release.range_args(f">{ctx.version}" if ctx.version else ">=0")
            check.fix = NoFix("no compat patch or conversion fixes this here"
                              + (f" (conversion refused: {hint})" if hint else "") + "; compare the releases after "
                              "this one: " + shlex.join(["compat", "doctor", model_name(ctx.target.path),
                                                         model_name(ctx.drafter.path), *later]))
