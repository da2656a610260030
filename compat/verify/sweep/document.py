"""The `compat verify --server --concurrency 1,2,4,...` document (`compat.verify-sweep/1`), from a Sweep: the two
servers, the pair check, each level's throughput, latency, acceptance and speed-up, the acceptance over the whole
sweep judged by compat/acceptance.py's rule, and whether speculation pays (judge.py). Pure: tested offline.
"""

from __future__ import annotations

from typing import Any

from compat.acceptance import HEALTHY, AcceptanceSample, judge as judge_acceptance, unknown
from compat.verify.server.counters import Measured, acceptance, traffic
from compat.verify.server.run import Requests
from compat.verify.server.summary import acceptance_json, doctor_command, latency, launch_line, tokens_per_s
from compat.verify.sweep.judge import NONE, Figures, judge
from compat.verify.sweep.measure import Level, Sweep
from compat.verify.sweep.pair import Side

SCOPE = "compat's requests at this level"


def document(s: Sweep) -> dict:
    levels = [level_json(s, level) for level in s.levels]
    pooled = pool([lv["_sample"] for lv in levels])
    for lv in levels:
        del lv["_sample"]
    launch = doctor_command(s.server.identity, s.server.speculation)
    accepted = judge_acceptance(pooled, next_step=launch) if pooled else unknown("no level measured any acceptance")
    figures = [Figures(lv["concurrency"], lv["speedup"], lv["acceptance"]["mean_accepted_length"], lv["step_cost"])
               for lv in levels]
    verdict = judge(figures, acceptance_verdict=accepted.verdict, acceptance_why=accepted.why)
    run = s.run.server
    doc: dict[str, Any] = {
        "server": side_json(s.server),
        "baseline": side_json(s.baseline) if s.baseline else None,
        "pair": s.pair.to_json() if s.pair else None,
        "prompts": {"source": run.prompts.source, "max_tokens": run.max_tokens, "temperature": run.temperature,
                    "seed": run.seed, "endpoint": "/v1/chat/completions (stream, the server's chat template)",
                    "requests_per_level": {str(lv.concurrency): lv.asked for lv in s.levels},
                    "level_timeout_s": s.run.level_timeout},
        "concurrency": list(s.run.levels),
        "levels": levels,
        "acceptance": {**acceptance_json(pooled, "compat's requests over the whole sweep", []),
                       "verdict": accepted.verdict, "why": accepted.why, "diagnosis": accepted.diagnosis.to_json()},
        "verdict": verdict.to_json(),
        "launch": launch_line(s.server.identity, s.server.speculation),
        "next": launch if accepted.verdict != HEALTHY else None,
        "complete": s.stop is None and len(s.levels) == len(s.run.levels),
        "stopped": s.stop.to_json() if s.stop else None,
        "seconds": s.seconds,
    }
    doc["failures"] = failures(doc)
    doc["passed"] = not doc["failures"]
    return doc


def exit_code(doc: dict, stop_code: int | None) -> int:
    if stop_code is not None:
        return stop_code
    return 0 if doc["passed"] else 1


def side_json(side: Side) -> dict:
    i, sp = side.identity, side.speculation
    return {"url": i.url, "engine": i.engine, "version": i.version, "model": i.model, "speculating": sp.speculating,
            "method": sp.method, "num_speculative_tokens": sp.num_speculative_tokens, "draft_model": sp.draft_model,
            "detected_from": {**i.evidence, **sp.evidence}, "names_from": side.facts.to_json(),
            "notes": [*i.notes, *sp.notes] + ([side.facts.note] if side.facts.note else [])}


def _measured(s: Sweep, level: Level) -> Measured:
    side = s.server
    found = acceptance(side.identity.engine, level.before, level.after, side.facts, SCOPE,
                       speculating=side.speculation.speculating, k=side.speculation.num_speculative_tokens)
    if s.log is None or (found.sample is not None and found.sample.drafts):
        return found  # the counters, differenced around the level, say it exactly
    from compat.verify.sweep.server_log import log_acceptance

    logged = log_acceptance(level.log_lines, side.identity.engine, s.log_sites, side.speculation.num_speculative_tokens)
    if logged is None:
        return Measured(found.sample, found.scope, found.notes + [f"--server-log {s.log.path}: no acceptance line was "
                                                                  "logged during this level"])
    return Measured(logged, "the server's log lines written during this level",
                    [f"from --server-log {s.log.path}: a logging interval that straddles two levels counts where it was "
                     "written"])


def _band(reqs: Requests) -> dict:
    lat = latency(reqs)
    return {key: ({q: lat[key][q] for q in ("p50", "p95")} if lat[key] else None) for key in ("ttft", "itl")}


def level_json(s: Sweep, level: Level) -> dict:
    measured = _measured(s, level)
    flow = traffic(level.before, level.after, s.server.facts, level.requests.tokens)
    ours = tokens_per_s(level.requests)["aggregate"]
    out: dict[str, Any] = {
        "concurrency": level.concurrency,
        "requests": _requests(level.requests, level.asked),
        "tokens_per_s": ours,
        "latency": _band(level.requests),
        "acceptance": acceptance_json(measured.sample, f"{measured.scope}, and other traffic" if flow.other
                                      else measured.scope, measured.notes),
        "other_traffic": flow.other,
        "traffic": flow.detail,
        "cut_short": level.cut_short,
        "baseline": None, "speedup": None, "step_cost": None, "outputs_equal": None,
        "_sample": measured.sample if measured.sample and (measured.sample.drafts is not None or
                                                           measured.sample.mean_accepted_length) else None,
    }
    if level.baseline is not None:
        theirs = tokens_per_s(level.baseline)["aggregate"]
        out["baseline"] = {"requests": _requests(level.baseline, level.asked), "tokens_per_s": theirs,
                           "latency": _band(level.baseline)}
        out["speedup"] = round(ours / theirs, 3) if ours and theirs else None
        out["step_cost"] = step_cost(out)
        if s.run.server.temperature == 0:
            out["outputs_equal"] = outputs_equal(level.requests, level.baseline)
    return out


def step_cost(level: dict) -> float | None:
    """A speculative step's time over a plain step's: the speculative ITL x tokens per step / the baseline's ITL."""
    ours, theirs = level["latency"]["itl"], level["baseline"]["latency"]["itl"]
    per_step = level["acceptance"]["mean_accepted_length"]
    if not ours or not theirs or not per_step or not theirs["p50"]:
        return None
    return round(ours["p50"] * per_step / theirs["p50"], 3)


def outputs_equal(ours: Requests, theirs: Requests) -> dict:
    by_index = {c.index: c for c in theirs.completions if c.ok}
    pairs = [(a, by_index[a.index]) for a in ours.completions if a.ok and a.index in by_index]
    differ = [a.index for a, b in pairs if a.text != b.text]
    return {"compared": len(pairs), "differ": len(differ), "equal": not differ if pairs else None}


def _requests(reqs: Requests, asked: int) -> dict:
    errors: list[str] = []
    for c in reqs.completions:
        if c.error and c.error not in errors:
            errors.append(c.error)
    return {"asked": asked, "sent": len(reqs.completions), "ok": len(reqs.ok), "failed": len(reqs.completions) - len(reqs.ok),
            "errors": errors[:3], "completion_tokens": reqs.tokens, "seconds": reqs.seconds}


def pool(samples: list[AcceptanceSample | None]) -> AcceptanceSample | None:
    """The levels' acceptance as one sample: their counts summed (the counters were differenced per level)."""
    found = [s for s in samples if s is not None and s.drafts]
    if not found:
        means = [s.mean_accepted_length for s in samples if s is not None and s.mean_accepted_length]
        if not means:
            return None
        first = next(s for s in samples if s is not None and s.mean_accepted_length)
        return AcceptanceSample(source=first.source + " (the levels' means averaged)",
                                mean_accepted_length=sum(means) / len(means),
                                num_speculative_tokens=first.num_speculative_tokens)
    drafts = sum(s.drafts or 0 for s in found)
    k = max((len(s.per_position) for s in found), default=0)
    if all(s.draft_tokens is not None and s.accepted_tokens is not None for s in found) and k:
        accepted_at = [sum(round((s.per_position[i] if i < len(s.per_position) else 0.0) * (s.drafts or 0)) for s in found)
                       for i in range(k)]
        return AcceptanceSample.from_counts(found[0].source, drafts, sum(s.draft_tokens or 0 for s in found),
                                            sum(s.accepted_tokens or 0 for s in found), accepted_at,
                                            num_speculative_tokens=k)
    generated = sum(s.generated_tokens or 0 for s in found)
    mean = generated / drafts if generated else None
    return AcceptanceSample(source=found[0].source, drafts=drafts, mean_accepted_length=mean,
                            num_speculative_tokens=found[0].num_speculative_tokens, generated_tokens=generated or None)


def failures(doc: dict) -> list[dict]:
    out = []
    acc = doc["acceptance"]
    if acc["verdict"] not in (HEALTHY, "unknown"):
        out.append({"check": "acceptance", "message": f"acceptance {acc['verdict']}: {acc['why']}"})
    if doc["verdict"]["pays"] == NONE:
        out.append({"check": "pays", "message": doc["verdict"]["summary"]})
    for lv in doc["levels"]:
        for side, reqs in (("speculative", lv["requests"]), ("baseline", (lv["baseline"] or {}).get("requests"))):
            if reqs and reqs["failed"]:
                out.append({"check": "requests", "message": f"concurrency {lv['concurrency']}: {reqs['failed']} of "
                                                            f"{reqs['sent']} {side} requests failed: {reqs['errors'][0]}"})
        equal = lv["outputs_equal"]
        if equal and equal["equal"] is False:
            out.append({"check": "baseline", "message": f"concurrency {lv['concurrency']}: greedy outputs differ from the "
                                                        f"baseline on {equal['differ']} of {equal['compared']} requests"})
    if doc["stopped"]:
        stop = doc["stopped"]
        out.append({"check": "stopped", "message": f"the sweep stopped at concurrency {stop['concurrency']} "
                                                   f"({stop['reason']}, during the {stop['during']})"})
    return out
