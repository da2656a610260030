"""Does speculation pay at this load? The crossover and the verdict of a sweep, with the reason, from the figures of
each level. Pure and typed: tested offline on figures alone.

The speed-up at a level is the speculative server's output tokens/s over the baseline's, at the same concurrency,
for the same requests. It factors into what the drafter gains and what a speculative step costs:

    speed-up ~= L / r      L = tokens per speculative step (the mean accepted length, from the counters)
                           r = a speculative step's time over a plain step's (ITL x L over the baseline's ITL)

so the reason a level does not pay is read off the factors: acceptance (L near 1: the drafter is rarely right),
the drafter's own cost (r above L already at the lowest level: drafting and verifying cost more than they yield),
or batch effects (r grows with concurrency while L holds: the verification of K+1 tokens per request fills a batch
a plain step leaves room in). `BREAK_EVEN` is the margin within which a speed-up is neither a gain nor a loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

BREAK_EVEN = 0.02          # |speed-up - 1| within this: neither pays nor costs (a run's noise on a shared host)
NONE_ACCEPTED = 1.01       # tokens per step at most this: no draft token kept, so a step yields one token and costs
                           # more than a plain one (drafting + verifying K+1): a speed-up above 1 there is noise
ACCEPTANCE_LOW = 1.10      # tokens per step under which the drafter adds next to nothing
ACCEPTANCE_FALLS = 0.10    # L dropping by more than this share from the lowest level to the highest: it falls with load
COST_GROWS = 0.10          # r growing by more than this share: batch effects

EVERY, NONE, UP_TO, FROM, MIXED, UNKNOWN = "every", "none", "up-to", "from", "mixed", "unknown"


@dataclass(frozen=True)
class Figures:
    """One level, as the verdict needs it (None: not measured)."""

    concurrency: int
    speedup: float | None
    accepted_per_step: float | None       # L
    step_cost: float | None               # r


@dataclass(frozen=True)
class Reason:
    kind: str        # acceptance | drafter-cost | batch-effects | acceptance-falls | baseline-missing
    text: str

    def to_json(self) -> dict:
        return {"kind": self.kind, "text": self.text}


@dataclass
class Verdict:
    pays: str                          # every | none | up-to | from | mixed | unknown
    summary: str
    crossover: float | None = None     # the concurrency where the speed-up crosses 1 (interpolated)
    pays_at: list[int] = field(default_factory=list)
    costs_at: list[int] = field(default_factory=list)
    reasons: list[Reason] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"pays": self.pays, "summary": self.summary, "crossover": self.crossover, "pays_at": self.pays_at,
                "costs_at": self.costs_at, "reasons": [r.to_json() for r in self.reasons], "break_even": BREAK_EVEN}


def pays(speedup: float, accepted_per_step: float | None = None) -> bool | None:
    """True: a gain; False: a loss; None: within the break-even margin. A level that kept no draft token cannot gain,
    whatever its (noisy) timing says."""
    if accepted_per_step is not None and accepted_per_step <= NONE_ACCEPTED:
        return False
    if abs(speedup - 1) <= BREAK_EVEN:
        return None
    return speedup > 1


def judge(levels: list[Figures], *, acceptance_verdict: str | None, acceptance_why: str | None) -> Verdict:
    measured = [f for f in levels if f.speedup is not None]
    if not measured:
        return _without_baseline(levels, acceptance_verdict, acceptance_why)
    gains = [f.concurrency for f in measured if _pays(f) is True]
    losses = [f.concurrency for f in measured if _pays(f) is False]
    verdict = _shape(measured, gains, losses)
    verdict.reasons = reasons(measured, verdict, acceptance_verdict, acceptance_why)
    noisy = [f for f in measured if (f.speedup or 0) > 1 + BREAK_EVEN and _pays(f) is False]
    if noisy:
        verdict.reasons.append(Reason("noise", "measured " + ", ".join(_x(f) for f in noisy) + " with no draft token "
                                      "accepted: a step that yields one token cannot beat a plain step, so that is the "
                                      "host's noise (more requests per level: --num-prompts)"))
    return verdict


def _pays(f: Figures) -> bool | None:
    return pays(f.speedup or 0, f.accepted_per_step)


def _shape(measured: list[Figures], gains: list[int], losses: list[int]) -> Verdict:
    tried = ", ".join(str(f.concurrency) for f in measured)
    worst = min(measured, key=lambda f: f.speedup or 0)
    best = max(measured, key=lambda f: f.speedup or 0)
    if not losses and gains:
        return Verdict(EVERY, f"speculation pays at every level tried ({tried}): {_x(best)} at best, {_x(worst)} at worst",
                       pays_at=gains)
    if not gains:
        even = "" if losses else " (break-even within ±{:.0%} everywhere)".format(BREAK_EVEN)
        if all((f.accepted_per_step or 2) <= NONE_ACCEPTED for f in measured):
            return Verdict(NONE, f"speculation pays at none of the levels tried ({tried}): no draft token was accepted "
                                 f"at any ({_x(worst)} at worst)", costs_at=losses)
        return Verdict(NONE, f"speculation pays at none of the levels tried ({tried}){even}: "
                             f"{_x(worst)} at worst, {_x(best)} at best", costs_at=losses)
    order = [_pays(f) for f in measured]
    last_gain = max(i for i, p in enumerate(order) if p is True)
    first_loss = min(i for i, p in enumerate(order) if p is False)
    if last_gain < first_loss and all(p is not True for p in order[first_loss:]):
        low, high = measured[last_gain], measured[first_loss]
        at = crossover(low, high)
        beyond = [f for f in measured[first_loss:] if _pays(f) is False]
        cost = 1 - min(f.speedup or 1 for f in beyond)
        return Verdict(UP_TO, f"speculation pays up to concurrency {low.concurrency} ({_x(low)}) and costs "
                              f"{cost:.0%} above it ({', '.join(_x(f) for f in beyond)}); the crossover is near "
                              f"concurrency {_round(at)}", crossover=at, pays_at=gains, costs_at=losses)
    first_gain = min(i for i, p in enumerate(order) if p is True)
    if first_loss < first_gain and all(p is not False for p in order[first_gain:]):
        at = crossover(measured[first_gain - 1], measured[first_gain])
        return Verdict(FROM, f"speculation costs up to concurrency {measured[first_gain - 1].concurrency} and pays "
                             f"from {measured[first_gain].concurrency} on ({_x(measured[first_gain])}): unusual, "
                             "re-run to rule out noise", crossover=at, pays_at=gains, costs_at=losses)
    return Verdict(MIXED, "no single crossover: it pays at " + ", ".join(map(str, gains)) + " and costs at " +
                   ", ".join(map(str, losses)) + " (noisy levels: more requests per level, --num-prompts)",
                   pays_at=gains, costs_at=losses)


def crossover(low: Figures, high: Figures) -> float:
    """Where the speed-up crosses 1 between two levels, interpolated on a log2 concurrency axis."""
    a, b = low.speedup or 1.0, high.speedup or 1.0
    x0, x1 = math.log2(low.concurrency), math.log2(high.concurrency)
    if a == b:
        return float(high.concurrency)
    share = min(1.0, max(0.0, (a - 1) / (a - b)))
    return round(2 ** (x0 + share * (x1 - x0)), 2)


def reasons(measured: list[Figures], verdict: Verdict, acceptance_verdict: str | None,
            acceptance_why: str | None) -> list[Reason]:
    out: list[Reason] = []
    lows = [f for f in measured if f.accepted_per_step is not None]
    if acceptance_verdict not in (None, "healthy", "unknown"):
        out.append(Reason("acceptance", f"acceptance is {acceptance_verdict} ({acceptance_why}): the drafter's tokens "
                                        "are rarely kept, so every speculative step costs more than it yields"))
    elif lows and max(f.accepted_per_step or 0 for f in lows) < ACCEPTANCE_LOW:
        out.append(Reason("acceptance", f"each speculative step yields {_l(lows[0])} tokens: the drafter adds next to "
                                        "nothing"))
    costed = [f for f in measured if f.step_cost is not None and f.accepted_per_step is not None]
    if verdict.pays in (NONE, UP_TO, MIXED) and costed:
        first = costed[0]
        if not out and (first.step_cost or 0) > (first.accepted_per_step or 0):
            out.append(Reason("drafter-cost", f"the drafter's own cost: at concurrency {first.concurrency} a "
                                              f"speculative step takes {first.step_cost:.2f}x a plain step's time and "
                                              f"yields {_l(first)} tokens"))
        last = costed[-1]
        acceptance_said = any(r.kind == "acceptance" for r in out)
        if not acceptance_said and len(costed) > 1 and (last.step_cost or 0) > (first.step_cost or 0) * (1 + COST_GROWS):
            out.append(Reason("batch-effects", f"batch effects: a speculative step costs {first.step_cost:.2f}x a plain "
                                               f"step at concurrency {first.concurrency} and {last.step_cost:.2f}x at "
                                               f"{last.concurrency} (verifying K+1 tokens per request fills the batch), "
                                               f"while it yields {_l(first)} then {_l(last)} tokens"))
        if len(costed) > 1 and (last.accepted_per_step or 0) < (first.accepted_per_step or 0) * (1 - ACCEPTANCE_FALLS):
            out.append(Reason("acceptance-falls", f"acceptance falls with load: {_l(first)} tokens per step at "
                                                  f"concurrency {first.concurrency}, {_l(last)} at {last.concurrency}"))
    if not out and verdict.pays in (EVERY, FROM) and costed:
        best = max(costed, key=lambda f: f.speedup or 0)
        out.append(Reason("acceptance", f"each speculative step yields {_l(best)} tokens for {best.step_cost:.2f}x a "
                                        f"plain step's time (concurrency {best.concurrency})"))
    if not out and verdict.pays in (NONE, UP_TO, MIXED):
        shown = "; ".join(f"{_x(f)}: {_l(f)} tokens per step for {f.step_cost:.2f}x a plain step" if f.step_cost
                          else _x(f) for f in measured)
        out.append(Reason("unexplained", f"neither the tokens per step nor the per-token step cost explain it ({shown}): "
                                         "the levels' wall times moved more than their per-token times, a stall or "
                                         "other load on a host; more requests per level (--num-prompts) tell"))
    return out


def _without_baseline(levels: list[Figures], acceptance_verdict: str | None, acceptance_why: str | None) -> Verdict:
    verdict = Verdict(UNKNOWN, "whether speculation pays cannot be known without --baseline (the same target served "
                               "without speculation): the speed-up, the crossover and the step cost need it; acceptance "
                               "and throughput per level only")
    verdict.reasons.append(Reason("baseline-missing", "no baseline: give --baseline URL2"))
    if acceptance_verdict not in (None, "healthy", "unknown"):
        verdict.reasons.append(Reason("acceptance", f"acceptance is {acceptance_verdict} ({acceptance_why}): "
                                                    "speculation cannot pay with it"))
    return verdict


def _x(f: Figures) -> str:
    return f"{f.speedup:.2f}x at {f.concurrency}"


def _l(f: Figures) -> str:
    return f"{f.accepted_per_step:.2f}" if f.accepted_per_step is not None else "?"


def _round(x: float | None) -> str:
    if x is None:
        return "?"
    return str(int(round(x))) if x >= 3 else f"{x:.1f}"
