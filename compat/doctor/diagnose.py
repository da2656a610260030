"""The whole answer for one release (checks, verified fixes, verdict, launch command), and for a range.

    sources -> probes -> report ----\\
    target config.json --------------+-> checks (checks/, one per file) -> fixes -> verdict + launch
    drafter config + tensor headers -/
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Callable

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from compat.checks import (FAIL, Ctx, Drafter, Options, Result, all_checks, launch_from_line, resolve_method,
                           suggested_launch)
from compat.doctor.fixes import (applicable_patches, converted_path, fix_with_conversion, fix_with_input, fix_with_line, fix_with_patches,
                                 fix_with_release, where_to_patch)
from compat.fix import AskFix, ConvertFix, LineFix, PatchFix, ReleaseFix, typed
from compat.doctor import reuse
from compat.doctor.releases import ReleaseFinder, class_loaders
from compat.core.errors import SourceError, UsageError
from compat.core.progress import Progress, each
from compat.target import Target
from compat.core.tree import EngineTree

# The overall verdict, from the checks and their fixes (classify).
WORKS = "works as is"
WORKS_PATCHED = "works after compat patch"
NEEDS_CONVERT = "needs a converted drafter"
WORKS_PATCHED_CONVERTED = "works after compat patch + a converted drafter"
WORKS_LINE_FIXED = "works with the launch line as doctor prints it (your line, changed)"
WORKS_COMMAND_FIXED = "works with the launch command as doctor prints it (not as your options asked)"  # no line given
DOES_NOT_WORK = "does not work"
CANNOT_TELL = "cannot tell: the release checks what doctor cannot read (see the warnings)"
DEPENDS = "depends on how the drafter was trained (say --layer-ids-convention)"
DEPENDS_LAYERS = "depends on which layers the drafter was trained on (say --layer-ids)"
DEPENDS_VENV = "depends on the serving venv: it needs a package the engine does not install (check it: the command shown)"
SOURCE_UNAVAILABLE = "source unavailable"
UNCHECKED = "cannot tell: some checks read facts compat does not read from this engine yet"


def run_checks(ctx: Ctx) -> list[Result]:
    """Every check that applies, in order (within a release's row, a check asked again in the same context is answered
    from what it answered: compat/doctor/reuse.py)."""
    return [reuse.run(check, ctx) for check in all_checks() if check.applies(ctx)]


def diagnose(tree: EngineTree, target: Target, drafter: Drafter, options: Options | None = None, *, try_fixes: bool = True,
             releases: ReleaseFinder | None = None) -> dict[str, Any]:
    """The whole answer for one release: checks, fixes, verdict, launch command.

    `releases` (a compat.doctor.releases.ReleaseFinder) lets a check name the release that first has
    what this one lacks; without it the checks say only what this release lacks."""
    from compat.report import build_report

    options = options or Options()
    row = reuse.active()
    report = row.of_tree(tree, build_report) if row is not None else build_report(tree)
    loaders = row.of_tree(tree, class_loaders) if row is not None else class_loaders(tree)
    finder: Callable[[str, str], str | None] | None = releases.bound(report.get("version")) if releases else None
    ctx = Ctx(report, target, drafter, options, finder, loaders)
    checks = run_checks(ctx)
    if try_fixes:
        fix_with_line(ctx, checks)
        fix_with_input(ctx, checks)
        fix_with_conversion(ctx, checks, first_only=True)  # a drafter-local fix before changing the engine
        fix_with_patches(tree, ctx, checks)
        fix_with_conversion(ctx, checks)
        fix_with_release(ctx, checks)
    verdict = classify(checks, line_given=options.launch is not None)
    steps = fix_steps(tree, ctx, checks) if verdict != DOES_NOT_WORK else []  # they would not make it work
    converted = next((step["dst"] for step in steps if step["kind"] == "convert"), None)
    if options.launch is not None:  # the user's own line, fixed
        launch = launch_from_line(ctx, [e for c in checks for e in c.edits], converted)
    else:
        launch = suggested_launch(ctx, converted)
    return {
        "engine": report["engine"], "version": report.get("version"), "source": report.get("source"),
        "target": {"path": str(target.path), "model_type": target.model_type, "architecture": target.architecture,
                   "num_hidden_layers": target.num_hidden_layers, "vocab_size": target.vocab_size},
        "drafter": {"path": str(drafter.path), "architecture": drafter.architecture,
                    "layout": drafter.layout.NAME if drafter.layout else None, "tensors": len(drafter.tensors),
                    "trained_layer_ids": drafter.trained_ids,
                    **({} if drafter.present else {"present": False})},
        "method": {"family": ctx.method.family, "launched": ctx.method.launched, "from": ctx.method.source,
                   "resolved": resolve_method(ctx).to_json(), "platform": options.platform},
        "checks": [c.to_json() for c in checks],
        "verdict": verdict,
        "fix_steps": steps,
        "instead": [f"{c.check}: {c.fix.text}" for c in checks if c.verdict == FAIL and isinstance(c.fix, ReleaseFix)],
        "launch": {"argv": launch["argv"], "module_argv": launch["module_argv"], "command": shlex.join(launch["argv"]),
                   "speculative_config": launch.get("speculative_config"),
                   "runnable": verdict not in (DOES_NOT_WORK, DEPENDS, DEPENDS_LAYERS, UNCHECKED), "after": [step["kind"] for step in steps],
                   **({"typed": launch["typed"], "edits": launch["edits"]} if "typed" in launch else {})},
        "probe_errors": report.get("probe_errors") or [],
        **({"preflight": options.preflight.to_json()} if options.preflight is not None else {}),
    }


def fix_steps(tree: EngineTree, ctx: Ctx, checks: list[Result]) -> list[dict[str, Any]]:
    """Every fix to run, in order and in as few commands as possible: one `compat patch` with all the
    patches the failing checks need, then the conversion (whose output the launch command names)."""
    failing = [c.fix for c in checks if c.fix and (c.verdict == FAIL or isinstance(c.fix, PatchFix))]
    patches = [f for f in failing if isinstance(f, PatchFix)]
    order = [p.id for p in applicable_patches(ctx.engine, tree.version)]
    ids = sorted({pid for f in patches for pid in f.patch_ids}, key=order.index)
    settings = {pid: opts for f in patches for pid, opts in (f.options or {}).items()}
    steps: list[dict[str, Any]] = [{"kind": "ask", "command": f.text} for f in failing if isinstance(f, AskFix)][:1]
    if ids:
        command, plugin = PatchFix.commands(ctx.release, ids, settings)
        steps.append({"kind": "patch", "patch_ids": ids, "command": command, "plugin": plugin,
                      "note": where_to_patch(ctx)})
    convert = next((f for f in failing if isinstance(f, ConvertFix)), None)
    if convert:
        steps.append({"kind": "convert", "command": convert.command, "dst": converted_path(ctx)})
    return steps


def classify(checks: list[Result], line_given: bool = True) -> str:
    """The verdict of the checks with their fixes; `line_given`: the user gave a launch line (a fix of the line is a
    change of theirs), else the fixes change what doctor's options asked for (`--method eagle4`)."""
    verdict = _classify(checks, line_given)
    if verdict in (DOES_NOT_WORK, DEPENDS, DEPENDS_LAYERS):
        return verdict
    # what the release needs from the serving venv, which doctor could not ask: it works only if the venv has it
    return DEPENDS_VENV if any(c.venv is not None and c.verdict != FAIL for c in checks) else verdict


def _classify(checks: list[Result], line_given: bool) -> str:
    kinds = {c.fix.kind if c.fix is not None else None for c in checks if c.verdict == FAIL}
    if not kinds:
        if any(c.unread for c in checks):  # a third engine before its checks are written
            return UNCHECKED
        return CANNOT_TELL if any(c.undecided for c in checks) else WORKS
    if kinds == {"line"}:
        return WORKS_LINE_FIXED if line_given else WORKS_COMMAND_FIXED
    kinds -= {"line"}  # the launch printed is the fixed line: the other fixes decide
    if kinds - {"patch", "convert", "ask"}:
        return DOES_NOT_WORK
    if "ask" in kinds:
        asks = [c.fix for c in checks if c.verdict == FAIL and isinstance(c.fix, AskFix)]
        return DEPENDS_LAYERS if any(a.question == "layers" for a in asks) else DEPENDS
    if kinds == {"patch"}:
        return WORKS_PATCHED
    if kinds == {"convert"}:
        return NEEDS_CONVERT
    return WORKS_PATCHED_CONVERTED


def diagnose_range(engine: str, specifier: str, target: Target, drafter: Drafter, options: Options | None = None, *,
                   versions: list[str] | None = None, open_release: Callable[[str], EngineTree] | None = None,
                   cache_dir: str | Path | None = None, offline: bool = False,
                   progress: Progress | None = None) -> dict[str, Any]:
    """One diagnosis per release in `specifier` (from the package index, or `versions`); the releases
    missing from the facts cache are probed in parallel first.

    `progress` (compat.core.progress) is told of each iteration (a progress bar); None iterates silently."""
    trees, finder = release_trees(engine, specifier, versions=versions, open_release=open_release, cache_dir=cache_dir,
                                  offline=offline, progress=progress)
    versions_read = each(progress, list(trees), f"diagnosing {engine} releases") if progress else list(trees)
    rows = [release_row(version, trees[version], target, drafter, options, finder) for version in versions_read]
    return {"engine": engine, "releases": specifier, "target": str(target.path), "drafter": str(drafter.path), "rows": rows}


def release_trees(engine: str, specifier: str, *, versions: list[str] | None = None,
                  open_release: Callable[[str], EngineTree] | None = None, cache_dir: str | Path | None = None,
                  offline: bool = False, progress: Progress | None = None,
                  ) -> tuple[dict[str, EngineTree | SourceError], ReleaseFinder]:
    """version -> its tree (or why it could not be had) for every release in `specifier`, oldest first, probed into
    the facts cache (in parallel); and the finder of later releases the fixes name. doctor --releases and the
    matrix both start here."""
    from compat.report import probe_missing
    from compat.sources.released import fetch_release, list_releases

    try:
        spec = SpecifierSet(specifier)
    except InvalidSpecifier:
        raise UsageError(f"--releases {specifier!r} is not a version specifier", hint="e.g. --releases '>=0.10,<0.34'") from None
    if versions is None:
        versions = list_releases(engine, cache_dir=cache_dir, offline=offline)
    chosen = sorted((v for v in versions if spec.contains(Version(v), prereleases=False)), key=Version)
    if not chosen:
        raise SourceError(f"no {engine} release matches {specifier!r}", hint=f"known: {', '.join(versions[-8:])}")
    open_release = open_release or (lambda v: fetch_release(engine, f"=={v}", cache_dir=cache_dir, offline=offline, progress=False))
    finder = ReleaseFinder(engine, open_release=open_release, versions=versions)
    trees: dict[str, EngineTree | SourceError] = {}
    for version in (each(progress, chosen, f"{engine} releases") if progress else chosen):
        try:
            trees[version] = open_release(version)
        except SourceError as err:
            trees[version] = err
    probe_missing([t for t in trees.values() if not isinstance(t, SourceError)],  # in parallel, into the facts cache
                  progress=progress, what=f"probing {engine} releases")
    return trees, finder


def release_row(version: str, tree: EngineTree | SourceError, target: Target, drafter: Drafter, options: Options | None,
                finder: ReleaseFinder | None) -> dict[str, Any]:
    """One release's row of doctor --releases (and one cell of the matrix): verdict, fixes, failing checks, launch,
    and the whole diagnosis."""
    if isinstance(tree, SourceError):
        return {"version": version, "verdict": SOURCE_UNAVAILABLE, "error": tree.message.split("\n")[0], "fixes": []}
    with reuse.reusing():  # the readings of an ask reuse the diagnosis: its report, overlays and check answers
        diagnosis = diagnose(tree, target, drafter, options, releases=finder)
        row = {"version": version, "verdict": diagnosis["verdict"], "fixes": fix_summary(diagnosis["checks"]),
               "failing": [c["check"] for c in diagnosis["checks"] if c["verdict"] == FAIL],
               "launch": diagnosis["launch"]["command"], "diagnosis": diagnosis}
        told = answers(tree, target, drafter, diagnosis["verdict"], options, finder)
    return {**row, "answers": told} if told else row


def answers(tree: EngineTree, target: Target, drafter: Drafter, verdict: str, options: Options | None,
            finder: ReleaseFinder | None) -> dict[str, str]:
    """For a verdict that waits on the user's answer: the answer, as the flag that gives it -> the verdict that answer
    gives on this release (the drafter read again as told, the whole diagnosis run again: within a row, only the
    checks that read what the answer changes run again, compat/doctor/reuse.py). Layers other than the
    trainers' default are not listed: which they are is the user's, and doctor's fix for them is a conversion."""
    from compat.checkpoints import CONVENTION_FLAG, CONVENTIONS, LAYER_IDS_FLAG, default_layer_ids
    from compat.doctor.inputs import recognise

    def again(**told: Any) -> Drafter:
        return recognise(Drafter(drafter.path, dict(drafter.config), dict(drafter.tensors), maps=drafter.maps), target,
                         **told)

    if verdict == DEPENDS:
        readings = {f"{CONVENTION_FLAG} {c}": again(convention=c) for c in CONVENTIONS}
    elif verdict == DEPENDS_LAYERS and target.num_hidden_layers:
        ids = default_layer_ids(target.num_hidden_layers)
        readings = {f"{LAYER_IDS_FLAG} {' '.join(map(str, ids))}": again(layer_ids=ids)}
    else:
        return {}
    return {said: diagnose(tree, target, d, options, releases=finder)["verdict"] for said, d in readings.items()}


def fix_summary(checks: list[dict[str, Any]]) -> list[str]:
    """One short phrase per distinct fix ("patch a,b", "convert", "use >=X"), for the --releases table (from the
    checks of a diagnosis: each fix as the dataclass it was made as, compat.fix.typed)."""
    fixes = [(c, typed(c["fix"])) for c in checks if c["fix"]]
    shown = [(c, fix) for c, fix in fixes if fix is not None and (c["verdict"] == FAIL or isinstance(fix, PatchFix))]
    newest = _newest_lower_bound([fix.releases for _, fix in shown if isinstance(fix, ReleaseFix)])
    out: list[str] = []
    for c, fix in shown:
        text = fix.phrase(c["check"], newest)
        if text not in out:
            out.append(text)
    return out


def _newest_lower_bound(ranges: list[str]) -> str | None:
    """">=0.5.10" when every range is a lone lower bound (">=0.5.9", ">=0.5.10"): a release meeting them all
    is one meeting the newest. None when a range is anything else (then each is shown as it is)."""
    try:
        specs = [SpecifierSet(r) for r in ranges]
    except InvalidSpecifier:
        return None
    bounds = [next(iter(spec)) for spec in specs if len(spec) == 1]
    if len(bounds) != len(specs) or not bounds or any(b.operator != ">=" for b in bounds):
        return None
    try:
        return ">=" + max((b.version for b in bounds), key=Version)
    except InvalidVersion:
        return None
