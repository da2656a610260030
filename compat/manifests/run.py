"""Run doctor on each serving container of a scan (see compat/manifests/checking.py for how each part is read)."""

from __future__ import annotations

import re
from typing import Any

from compat import engines
from compat.core.progress import Progress, each
from compat.core.errors import CompatError
from compat.fix import LineFix, PatchFix
from compat.launch_line import LaunchLine, LineEdit, fixed_words, read_line
from compat.manifests.checking import (
    NONE, UNCHECKED, Checked, Finding, Missing, Settings, Unavailable, arg_word, edit_where, launch_words, local_model,
    read_serving, release_of, spec_where,
)
from compat.manifests.model import Problem, Serving
from compat.manifests.scan import Scan

LOWER = re.compile(r">=\s*(\d[\w.]*)")


def check_all(scan: Scan, settings: Settings, progress: Progress | None = None) -> list[Checked]:
    trees: dict[tuple[str, str], Any] = {}
    memo: dict[tuple[Any, ...], dict[str, Any]] = {}
    servings = each(progress, scan.servings, "serving containers") if progress else scan.servings
    return [check_one(serving, settings, trees, memo) for serving in servings]


def check_one(serving: Serving, settings: Settings, trees: dict, memo: dict) -> Checked:
    checked = Checked(serving)
    checked.problems += [Problem(serving.where, f"{serving.name}: {why}", None, kind="unreadable", resource=serving.resource,
                                 level="note") for why in serving.unread]
    line, problem = read_serving(serving)
    if line is None:
        checked.problems.append(problem)  # type: ignore[arg-type]
        return checked
    checked.line, checked.engine = line, line.engine
    checked.target, checked.drafter = line.target, line.drafter
    version, source, problem = release_of(serving, line, settings)
    if version is None:
        checked.problems.append(problem)  # type: ignore[arg-type]
        return checked
    checked.version, checked.release_from = version, source
    tree = _tree(trees, line.engine, version, settings)
    if isinstance(tree, CompatError):
        checked.problems.append(Problem(serving.image.where if serving.image else serving.where,
                                        f"{serving.name}: {line.engine} {version}: {tree.message}", tree.hint, kind="release",
                                        resource=serving.resource))
        return checked
    if line.model_unread:  # `lmdeploy serve api_server --backend pytorch MODEL`: the release's parser says which word
        from compat.doctor.inputs import with_served_model

        line = with_served_model(line, tree)
        checked.line, checked.target = line, line.target
    target, why_target = local_model(line.target, settings, serving)
    drafterless, why_drafter = _no_drafter(line)
    drafter, why_drafter = (local_model(line.drafter, settings, serving) if line.drafter else (None, why_drafter))
    checked.models = {"target": str(target) if target else f"{UNCHECKED}: {why_target}",
                      "drafter": str(drafter) if drafter else (f"{NONE}: {why_drafter}" if drafterless
                                                              else f"{UNCHECKED}: {why_drafter}")}
    key = (line.engine, version, tuple(launch_words(serving)), str(target), str(drafter))
    if key not in memo:
        memo[key] = _diagnose(tree, line, target, drafter, why_target, why_drafter, settings, drafterless and not line.drafter)
    outcome = memo[key]
    checked.verdict = outcome["verdict"]
    checked.fixed_line = outcome["fixed"]
    checked.release_fix = outcome["release_fix"]
    patches = [r["fix"] for r in outcome["results"] if r["verdict"] == "fail" and (r.get("fix") or {}).get("kind") == "patch"]
    for result in outcome["results"]:
        where = _where(serving, line, result)
        checked.findings.append(Finding(serving, result["check"], result["title"], result["verdict"], result["detail"],
                                        where, _durable(serving, line, result.get("fix"), patches), result.get("location")))
    return checked


WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")  # what compat plugin manifest's Kustomize patch targets


def _durable(serving: Serving, line: LaunchLine, fix: dict[str, Any] | None, patches: list[dict[str, Any]]
             ) -> dict[str, Any] | None:
    """A patch fix for a container a manifest declares: the plugin's manifest (its init container applies the patches
    at every start), not `compat patch` inside a container whose next restart undoes it; one manifest with every patch
    the container's failing checks need (two would each add the same init container). Without an image to build the
    plugin on (a Ray Serve pip pin), the in-memory plugin in that environment."""
    if not fix or fix.get("kind") != "patch" or not fix.get("patch_ids"):
        return fix
    if serving.image is None:
        return {**fix, "command": fix.get("plugin") or fix.get("command")}
    ids = list(dict.fromkeys(pid for f in [*patches, fix] for pid in f.get("patch_ids") or ()))
    options = {pid: opts for f in [*patches, fix] for pid, opts in (f.get("options") or {}).items()}
    kind, _, name = serving.resource.partition("/")
    workload = (kind, name) if kind in WORKLOADS and name else None
    command = PatchFix.manifest_command(line.engine, serving.image.ref, ids, options, workload=workload,
                                        container=serving.container)
    return {**fix, "command": command, "plugin": command}


def _no_drafter(line: LaunchLine) -> tuple[bool, str]:
    """(the line's speculative settings run a method that takes no drafter, why there is no drafter). A speculative
    config without a draft model is a speculative config: n-gram, suffix and MTP heads (vLLM `{"method": "mtp"}`, SGLang
    `--speculative-algorithm NEXTN` with no draft path: the heads ship in the target) run without one."""
    from compat.methods import takes_drafter

    speculative = bool(line.spec) or line.method is not None
    if not speculative:
        return False, "the line configures no speculative decoding"
    takes = takes_drafter(line.engine, line.method)
    if takes is False:
        return True, f"{line.method} takes no drafter"
    named = f"method {line.method!r}" if line.method else "no method"
    return False, f"the line's speculative settings ({named}) name no draft model" + (
        f": {line.method} takes one" if takes else "")


def _where(serving: Serving, line: LaunchLine, result: dict[str, Any]):
    """The line a finding is about: the refused argument's words, else the first edit's, else the speculative settings."""
    for start, _ in result.get("line_words") or []:
        return arg_word(serving, line, start)
    for edit in result.get("line_edits") or []:
        found = edit_where(serving, line, LineEdit(edit["kind"], edit.get("why", ""), edit.get("start", 0), edit.get("end", 0),
                                                   edit.get("option", ""), tuple(edit.get("aliases") or ()), edit.get("key", ""),
                                                   edit.get("value")))
        if found is not None:
            return found
    return spec_where(serving, line) or (serving.words[0].where if serving.words else serving.where)


def _tree(trees: dict, engine: str, version: str, settings: Settings) -> Any:
    if (engine, version) not in trees:
        try:
            trees[engine, version] = settings.open_release(engine, version) if settings.open_release else _fetch(engine, version, settings)
        except CompatError as err:
            trees[engine, version] = err
    return trees[engine, version]


def _fetch(engine: str, version: str, settings: Settings) -> Any:
    from compat.sources.released import fetch_release

    return fetch_release(engine, f"=={version}", cache_dir=settings.cache_dir, offline=settings.offline, progress=False)


def _options(line: LaunchLine) -> Any:
    from compat.checks import DEFAULT_SPEC_TOKENS, DEFAULT_TOPK, Options

    raw = [line.spec.get("num_speculative_tokens"), None] if engines.get(line.engine).spec_in_config else [
        line.spec.get("--speculative-num-steps"), line.spec.get("--speculative-eagle-topk")]
    numbers = [DEFAULT_SPEC_TOKENS, DEFAULT_TOPK]
    for i, value in enumerate(raw):
        try:
            numbers[i] = max(1, int(value)) if value is not None else numbers[i]
        except (TypeError, ValueError, OverflowError):
            pass
    return Options(numbers[0], numbers[1], launch=line)


def _diagnose(tree: Any, line: LaunchLine, target_path: Any, drafter_path: Any, why_target: str, why_drafter: str,
              settings: Settings, drafterless: bool = False) -> dict[str, Any]:
    from compat.doctor.releases import ReleaseFinder

    finder = ReleaseFinder(tree.engine, cache_dir=settings.cache_dir, offline=settings.offline)
    options = _options(line)
    if target_path is not None and (drafter_path is not None or drafterless):
        try:
            return _whole(tree, line, target_path, drafter_path, options, finder, settings)
        except CompatError as err:  # a model that is here but cannot be read: said, then the rest as if missing
            why_target = why_drafter = f"cannot read it: {err.message}"
            target_path = drafter_path = None
            drafterless = False
    return _partial(tree, line, target_path, drafter_path, why_target, why_drafter, options, finder, drafterless)


def _whole(tree, line, target_path, drafter_path, options, finder, settings) -> dict[str, Any]:
    from compat.doctor import diagnose, no_drafter, read_drafter, read_target

    target = read_target(target_path)
    drafter = (read_drafter(drafter_path, target, settings.layer_ids_convention, settings.layer_ids)
               if drafter_path is not None else no_drafter(target))
    d = diagnose(tree, target, drafter, options, releases=finder)
    fixed = d["launch"]["argv"] if d["launch"].get("edits") else None
    return {"verdict": d["verdict"], "results": d["checks"], "release_fix": _release_fix(d["checks"]),
            "fixed": fixed}


def _partial(tree, line, target_path, drafter_path, why_target, why_drafter, options, finder,
             drafterless: bool = False) -> dict[str, Any]:
    """The checks with each missing model marked: what needs it is unchecked, the rest runs."""
    from compat.checks import FAIL, Ctx, all_checks
    from compat.doctor import read_drafter, read_target
    from compat.doctor.diagnose import class_loaders
    from compat.doctor.fixes import fix_with_release
    from compat.report import build_report

    target: Any = read_target(target_path) if target_path is not None else Missing("target", why_target)
    drafter: Any = read_drafter(drafter_path, target) if drafter_path is not None and target_path is not None else Missing(
        "drafter", why_drafter if drafter_path is None and not drafterless else "needs the target too")
    ctx = Ctx(build_report(tree), target, drafter, options, finder.bound(tree.version), class_loaders(tree))
    results: list[dict[str, Any]] = []
    failing = []
    for check in all_checks():
        try:
            if not check.applies(ctx):  # which method runs may be the drafter's to say
                continue
            result = check(ctx)
        except Unavailable as missing:
            results.append({"check": check.id, "title": check.title, "verdict": UNCHECKED,
                            "detail": f"needs the {missing.what}: {missing.name}", "fix": None, "location": None})
            continue
        if result.verdict == FAIL:
            failing.append(result)
            _line_fix(ctx, result, line)
        results.append(result.to_json())
    try:
        fix_with_release(ctx, [r for r in failing if r.fix is None])
    except Unavailable:
        pass
    for result, data in ((r, d) for r in failing for d in results if d["check"] == r.check):
        data["fix"] = result.fix.to_json() if result.fix is not None else None
    edits = [e for r in failing if isinstance(r.fix, LineFix) for e in r.edits]
    return {"verdict": "fails" if failing else ("works as far as checked" if any(r["verdict"] == UNCHECKED for r in results)
                                                 else "works as is"),
            "results": results, "release_fix": _release_fix(results), "fixed": fixed_words(line, edits) if edits else None}


def _line_fix(ctx: Any, result: Any, line: LaunchLine) -> None:
    from compat.checks import FAIL, Ctx
    from compat.doctor.fixes import may_fix, rerun

    if not result.edits or not may_fix(result, "line"):
        return
    changed = read_line(fixed_words(line, list(result.edits)))
    try:
        from dataclasses import replace

        again = rerun(result, ctx.with_options(replace(ctx.options, launch=changed)))
    except Unavailable:
        return
    if again.verdict != FAIL:
        result.fix = LineFix("the launch line: " + "; ".join(e.why for e in result.edits))


def _release_fix(results: list[dict[str, Any]]) -> str | None:
    """The lowest release that has what every release-fixed check lacks (the image tag --fix writes)."""
    from packaging.version import InvalidVersion, Version

    bounds = []
    for result in results:
        fix = result.get("fix") or {}
        if result.get("verdict") == "fail" and fix.get("kind") == "release":
            found = LOWER.search(fix.get("releases") or "")
            if found:
                try:
                    bounds.append(Version(found.group(1)))
                except InvalidVersion:
                    pass
    return str(max(bounds)) if bounds else None
