"""speculation_profile.json: NVIDIA ModelOpt's portable acceptance profile, schema 1.0, as its own producer writes
it (Model-Optimizer `examples/specdec_bench/specdec_bench/speculation_profile.py`, `build_profile`), with compat's
fields beside it under one key, `compat`: the engine and release measured, the server's launch line, `compat
doctor`'s verdict at measure time, and the whole sweep (per level: throughput, latency, speed-up, acceptance counts).

ModelOpt's fields, from a server's counters (vLLM: drafts and accepted tokens per position, differenced around
compat's own requests):
  marginal_accept_rates[i]     P(the first i+1 drafts all accepted) = accepted at position i / drafts
  conditional_accept_rates[i]  P(draft i+1 accepted | the first i were) = marginal[i] / marginal[i-1]
  acceptance_length_histogram  {L: decode steps that emitted L tokens}: drafts with exactly L-1 accepted
  mean_accept_length           per decode step, 1 + accepted / drafts (ModelOpt's canonical mean)
  mean_accept_length_per_request  null: a server's counters do not tell requests apart (said, not guessed)
  validation                   ModelOpt's two checks: 1 + sum(marginals) against the mean (tolerance 0.02), and
                               marginals non-increasing
Without per-position counters (SGLang) the vectors are null and compat's field says why.

`read_profile` reads any schema-1 profile (compat's, or one ModelOpt wrote: then only its vectors compare) and
refuses what no consumer could use, naming the file and the key.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat.core.errors import RefusedError, UsageError

SCHEMA_VERSION = "1.0"
COMPAT_SCHEMA = "compat.speculation-profile/1"
# ModelOpt's methods whose K=n draft is a prefix of the K=n+1 draft (its _CHAIN_DRAFTING_METHODS): the marginal
# vector extrapolates over K ("chain_analytic"); any other method must be measured per K.
CHAIN_METHODS = frozenset({"eagle", "eagle1", "eagle2", "eagle3", "draft_model"})
MEAN_TOLERANCE = 0.02
MAX_PROFILE = 16 << 20


def checkpoint_id(path: str | None) -> str | None:
    """A path reduced to `org/model` (ModelOpt's rule: a published profile carries no cluster layout)."""
    parts = [p for p in str(path or "").replace("\\", "/").split("/") if p]
    if not parts:
        return None
    return "/".join(parts[-2:])


def histogram(drafts: int, accepted_at: list[int]) -> dict[str, int]:
    """{emitted tokens: steps}: a draft step with exactly j drafts accepted emits j + 1 tokens."""
    counts = [drafts, *accepted_at]
    out = {}
    for j in range(len(accepted_at) + 1):
        after = counts[j + 1] if j + 1 < len(counts) else 0
        if counts[j] - after:
            out[str(j + 1)] = counts[j] - after
    return out


def conditional(marginal: list[float]) -> list[float]:
    out, prev = [], 1.0
    for m in marginal:
        out.append(m / prev if prev > 0 else 0.0)
        prev = m
    return out


def validation(mean: float, marginal: list[float]) -> dict:
    implied = 1.0 + sum(marginal)
    violations = [{"position": i, "value": marginal[i], "previous": marginal[i - 1]}
                  for i in range(1, len(marginal)) if marginal[i] > marginal[i - 1] + 1e-9]
    return {"mean_consistency": {"implied_mean_accept_length": round(implied, 6),
                                 "reported_mean_accept_length": round(mean, 6), "abs_delta": round(abs(implied - mean), 6),
                                 "tolerance": MEAN_TOLERANCE, "passed": abs(implied - mean) <= MEAN_TOLERANCE},
            "marginal_monotonicity": {"passed": not violations, "violations": violations}}


def _counts(acc: dict) -> tuple[int, list[int]] | None:
    drafts, rates = acc.get("drafts"), acc.get("per_position") or []
    if not drafts or not rates:
        return None
    return drafts, [round(r * drafts) for r in rates]


def build_profile(doc: dict, result: Any = None, doctor: dict | None = None) -> dict:
    """The profile of a sweep document (document.py)."""
    server, acc = doc["server"], doc["acceptance"]
    method = server.get("method")
    counts = _counts(acc)
    k = server.get("num_speculative_tokens") or len(acc.get("per_position") or []) or None
    profile: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "measured": True, "method": method,
        "draft_checkpoint": checkpoint_id(server.get("draft_model")), "target_model": checkpoint_id(server.get("model")),
        "num_speculative_tokens": k, "block_size": None, "max_supported_k": k, "verification_method": "longest_prefix",
        "conditional_accept_rates": None, "marginal_accept_rates": None,
        "mean_accept_length": acc.get("mean_accepted_length"), "mean_accept_length_per_request": None,
        "accept_length_model": "chain_analytic" if method and method.lower() in CHAIN_METHODS else "measured_per_k",
        "accept_length_by_k": {str(k): acc["mean_accepted_length"]} if k and acc.get("mean_accepted_length") else {},
        "acceptance_length_histogram": None, "per_category": None,
        "measurement_conditions": {"dataset": doc["prompts"]["source"], "concurrency": doc["concurrency"],
                                   "engine": f"{server['engine']} {server.get('version') or ''}".strip(),
                                   "temperature": doc["prompts"]["temperature"], "max_tokens": doc["prompts"]["max_tokens"],
                                   "endpoint": doc["prompts"]["endpoint"]},
        "validation": None,
    }
    notes = []
    if counts is not None:
        drafts, accepted_at = counts
        marginal = [round(a / drafts, 6) for a in accepted_at]
        mean = 1 + sum(accepted_at) / drafts
        exact = conditional([a / drafts for a in accepted_at])
        profile.update(conditional_accept_rates=[round(c, 6) for c in exact],
                       marginal_accept_rates=marginal, mean_accept_length=round(mean, 6),
                       accept_length_by_k={str(k): round(mean, 6)} if k else {},
                       acceptance_length_histogram=histogram(drafts, accepted_at), validation=validation(mean, marginal))
    else:
        notes.append("the server publishes no per-position acceptance (SGLang has none): the vectors are null; "
                     "mean_accept_length is the counters' tokens per verify step")
    notes.append("mean_accept_length_per_request is null: a server's counters do not tell requests apart")
    profile["compat"] = _compat_fields(doc, doctor, notes)
    return profile


def _compat_fields(doc: dict, doctor: dict | None, notes: list[str]) -> dict:
    from compat import __version__

    server = doc["server"]
    levels = []
    for lv in doc["levels"]:
        counts = _counts(lv["acceptance"])
        levels.append({"concurrency": lv["concurrency"], "tokens_per_s": lv["tokens_per_s"],
                       "baseline_tokens_per_s": (lv["baseline"] or {}).get("tokens_per_s"), "speedup": lv["speedup"],
                       "step_cost": lv["step_cost"], "latency": lv["latency"],
                       "baseline_latency": (lv["baseline"] or {}).get("latency"),
                       "mean_accept_length": lv["acceptance"]["mean_accepted_length"],
                       "per_position": lv["acceptance"]["per_position"],
                       "drafts": counts[0] if counts else None, "accepted_per_position": counts[1] if counts else None,
                       "requests": lv["requests"]["sent"], "cut_short": lv["cut_short"]})
    return {"schema": COMPAT_SCHEMA, "compat_version": __version__,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "engine": server["engine"], "release": server.get("version"),
            "names_from": server["names_from"]["release"], "server": server["url"],
            "target_model": server.get("model"), "draft_model": server.get("draft_model"),
            "launch": doc.get("launch"), "doctor": doctor,
            "baseline": (doc.get("baseline") or {}).get("url"),
            "sweep": {"concurrency": doc["concurrency"], "requests_per_level": doc["prompts"]["requests_per_level"],
                      "max_tokens": doc["prompts"]["max_tokens"], "temperature": doc["prompts"]["temperature"],
                      "prompts": doc["prompts"]["source"], "levels": levels, "verdict": doc["verdict"],
                      "acceptance_verdict": doc["acceptance"]["verdict"], "complete": doc["complete"],
                      "stopped": doc["stopped"]},
            "notes": notes}


@dataclass
class Profile:
    """A schema-1 profile as --compare and doctor --profile read it."""

    path: str
    k: int | None
    marginal: list[float] | None
    mean: float | None
    method: str | None
    drafts: int | None = None                  # over the whole measurement (for the noise of each rate)
    engine: str | None = None
    release: str | None = None
    levels: tuple[int, ...] = ()
    requests_per_level: dict[int, int] = field(default_factory=dict)
    max_tokens: int | None = None
    temperature: float | None = None
    by_level: dict[int, dict] = field(default_factory=dict)
    verdict: dict | None = None
    doctor: dict | None = None
    producer: str = "modelopt"                 # "compat" when compat's fields are there

    @property
    def conditional(self) -> list[float] | None:
        return conditional(self.marginal) if self.marginal is not None else None


def _fail(path: str, problem: str) -> RefusedError:
    return RefusedError(f"{path}: {problem}", hint="a speculation_profile.json of schema 1.x, as ModelOpt's specdec_bench "
                                                   "or `compat verify --server ... --save-profile FILE` write it")


def read_profile(path: str) -> Profile:
    file = Path(path).expanduser()
    try:
        if file.stat().st_size > MAX_PROFILE:
            raise _fail(str(file), f"larger than {MAX_PROFILE >> 20} MiB: not a profile")
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{file}: no such profile") from None
    except IsADirectoryError:
        if (file / "speculation_profile.json").is_file():
            return read_profile(str(file / "speculation_profile.json"))
        raise _fail(str(file), "a directory without speculation_profile.json") from None
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _fail(str(file), "not JSON") from None
    except OSError as err:
        raise _fail(str(file), f"cannot read it ({err.strerror})") from None
    return profile_from(data, str(file))


def profile_from(data: Any, path: str) -> Profile:
    if not isinstance(data, dict) or not isinstance(data.get("schema_version"), str):
        raise _fail(path, "no schema_version: not a speculation profile")
    if data["schema_version"].split(".")[0] != "1":
        raise _fail(path, f"schema_version {data['schema_version']!r}: compat reads schema 1.x")
    if data.get("measured") is not True:
        raise _fail(path, "measured is not true: an unmeasured stub (ModelOpt's export writes one) has nothing to compare")
    k = data.get("num_speculative_tokens")
    if k is not None and (not isinstance(k, int) or k < 1):
        raise _fail(path, f"num_speculative_tokens {k!r}: not a positive whole number")
    marginal = data.get("marginal_accept_rates")
    if marginal is not None:
        if not isinstance(marginal, list) or not all(_rate(x) for x in marginal):
            raise _fail(path, "marginal_accept_rates: not a list of rates between 0 and 1")
        if k is not None and len(marginal) != k:
            raise _fail(path, f"marginal_accept_rates has {len(marginal)} entries, num_speculative_tokens is {k}")
        bad = [i for i in range(1, len(marginal)) if marginal[i] > marginal[i - 1] + 1e-9]
        if bad:
            raise _fail(path, f"marginal_accept_rates rises at position {bad[0]} ({marginal[bad[0] - 1]} then "
                              f"{marginal[bad[0]]}): a survival function never does (ModelOpt's marginal_monotonicity)")
    mean = data.get("mean_accept_length")
    if mean is not None and not (isinstance(mean, (int, float)) and math.isfinite(mean) and mean >= 1):
        raise _fail(path, f"mean_accept_length {mean!r}: not a number of at least 1")
    profile = Profile(path, k, [float(x) for x in marginal] if marginal is not None else None,
                      float(mean) if mean is not None else None, data.get("method"))
    hist = data.get("acceptance_length_histogram")
    if isinstance(hist, dict):
        try:
            profile.drafts = sum(int(v) for v in hist.values())
        except (TypeError, ValueError):
            profile.drafts = None
    extra = data.get("compat")
    if isinstance(extra, dict) and extra.get("schema") == COMPAT_SCHEMA:
        _read_compat(profile, extra, path)
    return profile


def _rate(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= 1


def _read_compat(profile: Profile, extra: dict, path: str) -> None:
    sweep: dict = extra["sweep"] if isinstance(extra.get("sweep"), dict) else {}
    try:
        levels = tuple(int(c) for c in sweep.get("concurrency") or ())
        per_level = {int(c): int(n) for c, n in (sweep.get("requests_per_level") or {}).items()}
    except (TypeError, ValueError):
        raise _fail(path, "compat.sweep.concurrency / requests_per_level: not whole numbers") from None
    profile.producer = "compat"
    profile.engine, profile.release = extra.get("engine"), extra.get("release")
    profile.levels = levels
    profile.requests_per_level = per_level
    profile.max_tokens = sweep.get("max_tokens") if isinstance(sweep.get("max_tokens"), int) else None
    temperature = sweep.get("temperature")
    profile.temperature = float(temperature) if isinstance(temperature, (int, float)) else None
    profile.by_level = {int(lv["concurrency"]): lv for lv in sweep.get("levels") or ()
                        if isinstance(lv, dict) and isinstance(lv.get("concurrency"), int)}
    profile.verdict = sweep.get("verdict") if isinstance(sweep.get("verdict"), dict) else None
    profile.doctor = extra.get("doctor") if isinstance(extra.get("doctor"), dict) else None
