"""`compat verify --compare PROFILE`: what changed since PROFILE was measured, per draft position, per level, and
against which release. The release-upgrade check: measure, upgrade, measure again with --compare.

A position regresses when its acceptance (marginal: the first i+1 drafts all accepted) falls by more than
`MIN_DROP` and by more than `NOISE_SIGMAS` standard errors of the two measurements (binomial over their drafts);
the first such position is where the drafter breaks (its conditional rate, given the earlier ones were accepted,
says how much). A level regresses when it paid and now costs, or its speed-up fell by more than `SPEEDUP_DROP`.
"""

from __future__ import annotations

import math

from compat.verify.sweep.profile import Profile

MIN_DROP = 0.05
NOISE_SIGMAS = 3.0
SPEEDUP_DROP = 0.15


def _noise(p0: float, n0: int | None, p1: float, n1: int | None) -> float:
    if not n0 or not n1:
        return 0.0
    return NOISE_SIGMAS * math.sqrt(p0 * (1 - p0) / n0 + p1 * (1 - p1) / n1)


def positions(profile: Profile, now: list[float], drafts_now: int | None) -> list[dict]:
    then = profile.marginal or []
    out = []
    for i in range(max(len(then), len(now))):
        a = then[i] if i < len(then) else None
        b = now[i] if i < len(now) else None
        row: dict = {"position": i, "then": a, "now": b, "change": None, "status": "not comparable"}
        if a is not None and b is not None:
            margin = max(MIN_DROP, _noise(a, profile.drafts, b, drafts_now))
            row.update(change=round(b - a, 4), margin=round(margin, 4),
                       status="regressed" if b < a - margin else "improved" if b > a + margin else "same")
        out.append(row)
    return out


def levels(profile: Profile, doc: dict) -> list[dict]:
    out = []
    for lv in doc["levels"]:
        then = profile.by_level.get(lv["concurrency"])
        if then is None:
            continue
        row = {"concurrency": lv["concurrency"], "speedup": {"then": then.get("speedup"), "now": lv["speedup"]},
               "tokens_per_s": {"then": then.get("tokens_per_s"), "now": lv["tokens_per_s"]},
               "mean_accept_length": {"then": then.get("mean_accept_length"),
                                      "now": lv["acceptance"]["mean_accepted_length"]},
               "per_position": {"then": then.get("per_position"), "now": lv["acceptance"]["per_position"]},
               "status": "same"}
        a, b = then.get("speedup"), lv["speedup"]
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if a > 1 >= b:
                row["status"] = "regressed"
                row["why"] = f"paid {a:.2f}x, now costs ({b:.2f}x)"
            elif b < a * (1 - SPEEDUP_DROP):
                row["status"] = "regressed"
                row["why"] = f"speed-up {a:.2f}x -> {b:.2f}x"
        out.append(row)
    return out


def release_words(profile: Profile, doc: dict) -> dict:
    server = doc["server"]
    now = f"{server['engine']} {server.get('version') or '?'}"
    then = f"{profile.engine} {profile.release or '?'}" if profile.engine else None
    if then is None:
        words = f"the profile does not record its engine release (written by {profile.producer}); now {now}"
    elif then == now:
        words = f"the same release ({now}): a change is the drafter's, the launch's, the hardware's or the traffic's"
    else:
        words = f"measured on {then}, now on {now}"
    return {"then": then, "now": now, "changed": then is not None and then != now, "words": words}


def compare(profile: Profile, doc: dict) -> dict:
    acc = doc["acceptance"]
    rows = positions(profile, acc["per_position"] or [], acc.get("drafts"))
    level_rows = levels(profile, doc)
    release = release_words(profile, doc)
    broken = [r for r in rows if r["status"] == "regressed"]
    slower = [r for r in level_rows if r["status"] == "regressed"]
    parts = []
    if broken:
        first = broken[0]
        known = profile.conditional or []
        cond_then = known[first["position"]] if first["position"] < len(known) else None
        now_marginal = acc["per_position"] or []
        i = first["position"]
        cond_now = (now_marginal[i] / now_marginal[i - 1] if i and now_marginal[i - 1] else now_marginal[i]) \
            if i < len(now_marginal) else None
        parts.append(f"acceptance regressed from position {i} on ({first['then']:.3f} -> {first['now']:.3f}"
                     + (f"; given the earlier positions accepted: {cond_then:.3f} -> {cond_now:.3f}"
                        if cond_then is not None and cond_now is not None else "") + ")")
    if slower:
        parts.append("speed-up regressed at concurrency " + ", ".join(f"{r['concurrency']} ({r['why']})" for r in slower))
    if not (profile.marginal and acc["per_position"]):
        parts.append("per-position acceptance not compared (" + ("the profile has no vectors" if not profile.marginal
                                                                  else "the server publishes none") + ")")
    summary = "; ".join(parts) if parts else "no regression: acceptance per position and speed-up per level hold"
    return {"profile": profile.path, "producer": profile.producer, "release": release, "positions": rows,
            "levels": level_rows, "regressions": len(broken) + len(slower), "summary": f"{summary} ({release['words']})"}
