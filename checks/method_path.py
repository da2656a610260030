"""The path the release takes for the method on the platform (`doctor --platform`, default cuda): the worker and model
runner it builds there and the proposer or worker class that drafts, from its own selection logic.

vLLM: the platform's worker (vllm/platforms/<platform>.py), the runner that worker builds (its V1/V2 switch, read with
the env default or left open when a config property decides), what that runner refuses (the CPU runner's assert
before 0.20: "spec decode is not supported."; the V2 runner's NotImplementedError for a method its init_speculator does
not build, 0.17 - 0.2x), and the proposer the runner's chain picks for the method (the `methods` fact). SGLang: the
worker class its create_worker builds for the algorithm the release resolves (the `methods` fact's workers). A choice
the release makes from what doctor cannot see keeps every runner it may take: agreeing, they pass; disagreeing, the
check says which does what. The other checks judge the drafter only by the runners kept here (compat/runner_choice.py).
"""

from __future__ import annotations

from compat.checks import ANY_METHOD, FAIL, PASS, WARN, Ctx, LaterRelease, Result, check
from compat.checks._resolve import resolve
from compat.runner_choice import choose


@check("method-path", "path: the runner and proposer the release takes for the method on this platform", order=67,
       needs=("method runners", "methods"), fixes=("release",), methods=ANY_METHOD)
def method_path(ctx: Ctx) -> Result:
    res = resolve(ctx)
    method = res.runs_as
    platform = ctx.options.platform
    release = f"{ctx.engine} {ctx.report.get('version')}"
    choice = choose(ctx.report, platform)
    if choice is None:
        return _worker(ctx, method, release, platform)
    if not choice.runners:
        return Result(WARN, f"cannot tell the path on {platform}: {choice.why}", choice.worker_location)
    v2 = ctx.fact("model_runners").get("v2_speculators")
    verdicts = [(r, r.refusal(method, v2)) for r in choice.runners]
    said = "; ".join(f"{r.cls} ({r.lineage or 'own'} runner, {r.location}) " + (f"raises {why[0]} ({why[1]})" if why
                     else f"runs {method!r}{_proposer(ctx, method, r.lineage)}") for r, why in verdicts)
    evidence = {"path": {"platform": platform, "worker": choice.worker, "decided": choice.decided,
                         "runners": [{"class": r.cls, "lineage": r.lineage, "refuses": why[0] if why else None}
                                     for r, why in verdicts]}}
    head = f"on {platform}, {release} builds {choice.why}: {said}"
    refused = [why for _, why in verdicts if why]
    if not refused:
        return Result(PASS, head, choice.worker_location, evidence)
    if len(refused) < len(verdicts):
        return Result(WARN, head + " (which one runs is the release's choice at start-up)", refused[0][1], evidence)
    first = ctx.first_release_where(f"{method} runs on {platform}", lambda report: _runs(report, platform, method))
    return Result(FAIL, head, refused[0][1], evidence, release=LaterRelease(first) if first else None,
                  remedy=None if first else f"another platform (--platform), or another method")


def _runs(report: dict, platform: str, method: str | None) -> bool:
    choice = choose(report, platform)
    if choice is None or not choice.runners:
        return False
    v2 = (report.get("model_runners") or {}).get("v2_speculators")
    return all(r.refusal(method, v2) is None for r in choice.runners)


def _proposer(ctx: Ctx, method: str | None, lineage: str | None) -> str:
    """The proposer the V1 runner's chain builds for the method, or the 0.34 config class (the `methods` fact)."""
    entry = (ctx.fact("methods").get("methods") or {}).get(method or "") or {}
    branch = entry.get("runner_branch") if lineage == "v1" else None
    if isinstance(branch, dict) and branch.get("proposer"):
        return f" with {branch['proposer']} ({branch.get('location')})"
    config = entry.get("config_class")
    if isinstance(config, dict) and config.get("class"):
        return f" with {config['class']} ({config.get('location')})"
    return ""


def _worker(ctx: Ctx, method: str | None, release: str, platform: str) -> Result:
    """An engine that builds one worker per algorithm (SGLang's create_worker)."""
    if method is None:
        res = resolve(ctx)
        why = res.refused or "; ".join(s.words() for s in res.steps) or "the release's choice cannot be read"
        return Result(WARN, f"no method runs: {why}", None)
    worker = (ctx.fact("methods").get("workers") or {}).get(method)
    if not isinstance(worker, dict):
        return Result(WARN, f"cannot tell which worker {release} builds for {method} (no create_worker branch read)",
                      ctx.fact("methods").get("location"))
    return Result(PASS, f"{release} runs {method} on {worker.get('class')} ({worker.get('module')}, {worker.get('location')}) "
                  f"on {platform}", worker.get("location"), {"path": {"platform": platform, "worker": worker.get("class")}})
