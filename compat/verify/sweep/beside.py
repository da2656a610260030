"""`compat doctor --profile PROFILE`: what was measured (a speculation_profile.json) next to what doctor predicts,
and whether the two agree. Doctor predicts from the release's source and the checkpoint whether the drafter will
launch and whether anything it checks degrades acceptance; the profile says what the server measured."""

from __future__ import annotations

from compat.acceptance import COLLAPSED_BELOW, DEGRADED_BELOW
from compat.verify.sweep.profile import Profile

WORKS_PREFIX = "works"


def measured_verdict(profile: Profile) -> tuple[str, str]:
    if profile.marginal:
        a0 = profile.marginal[0]
        verdict = "collapsed" if a0 < COLLAPSED_BELOW else "degraded" if a0 < DEGRADED_BELOW else "healthy"
        return verdict, f"position-0 acceptance {a0:.3f}"
    if profile.mean is not None:
        return "measured", f"mean accepted length {profile.mean:.2f} (no per-position figures)"
    return "unknown", "the profile has no acceptance figure"


def beside(diagnosis: dict, profile: Profile) -> dict:
    predicted = str(diagnosis.get("verdict") or "")
    verdict, why = measured_verdict(profile)
    release_now = diagnosis.get("version")
    notes = []
    if profile.release and release_now and profile.release.split("+")[0] != str(release_now):
        notes.append(f"the profile was measured on {profile.engine} {profile.release}; doctor checked {diagnosis.get('engine')} "
                     f"{release_now}: measure again there (compat verify --server URL --compare {profile.path})")
    if predicted.startswith(WORKS_PREFIX) and verdict in ("collapsed", "degraded"):
        agreement = (f"disagree: doctor finds nothing that degrades acceptance, the profile measured {why} ({verdict}): "
                     "a cause doctor does not check (the drafter's training or its target, the traffic), or a release "
                     "other than the one measured")
    elif not predicted.startswith(WORKS_PREFIX) and verdict == "healthy":
        agreement = (f"disagree: doctor says {predicted!r}, the profile measured {why} (healthy): it was measured with "
                     "a fix already applied, on another release, or the check's finding does not touch this pair")
    elif verdict in ("unknown", "measured"):
        agreement = f"not compared: {why}"
    else:
        agreement = f"agree: doctor says {predicted!r}, the profile measured {why} ({verdict})"
    sweep = profile.verdict or {}
    return {"profile": profile.path, "producer": profile.producer, "measured_on": f"{profile.engine} {profile.release}"
            if profile.engine else None, "per_position": profile.marginal, "conditional": profile.conditional,
            "mean_accept_length": profile.mean, "num_speculative_tokens": profile.k, "acceptance_verdict": verdict,
            "pays": sweep.get("summary"), "crossover": sweep.get("crossover"),
            "speedup_by_level": {c: lv.get("speedup") for c, lv in profile.by_level.items()},
            "doctor_at_measure_time": (profile.doctor or {}).get("verdict"), "predicted": predicted,
            "agreement": agreement, "agree": agreement.startswith("agree"), "notes": notes}


def lines(b: dict) -> list[str]:
    per = " / ".join(f"{p:.0%}" for p in b["per_position"] or [])
    out = [f"measured ({b['profile']}" + (f", {b['measured_on']}" if b["measured_on"] else "") + "):"]
    out.append(f"  acceptance {b['acceptance_verdict']}" + (f"; per position {per}" if per else "")
               + (f"; {b['mean_accept_length']:.2f} tokens per step" if b["mean_accept_length"] else ""))
    if b["speedup_by_level"]:
        out.append("  speed-up " + ", ".join(f"{s:.2f}x at {c}" for c, s in b["speedup_by_level"].items() if s is not None))
    if b["pays"]:
        out.append(f"  {b['pays']}")
    if b["doctor_at_measure_time"]:
        out.append(f"  doctor at measure time: {b['doctor_at_measure_time']}")
    out.append(f"predicted: {b['predicted']}; {b['agreement']}")
    out += [f"note: {n}" for n in b["notes"]]
    return out
