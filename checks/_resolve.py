"""The method as the release resolves it: the name it is given, and what it runs after its own renames, aliases,
promotions and auto-detection, each step with the file and line of the release that takes it.

- `doctor --method` takes compat's id of a family and either engine's name for it (`draft_model` asked of SGLang is
  its STANDALONE, `NEXTN` asked of vLLM its MTP name): the release is given its own name for the family. A launch
  line is given as typed: the release's parser decides, and a name it lacks is refused.
- What the release runs is read from its probes: vLLM's rewrites (`deepseek_mtp` runs as "mtp", the `methods` fact),
  its auto-detection chain, which up to 0.33 also overrides an explicit method it does not keep (a "draft_model"
  whose path holds "eagle3" runs as eagle3: the `method_autodetection` fact); SGLang's aliases (NEXTN runs as EAGLE)
  and promotions (EAGLE/NEXTN with a Gemma4 assistant draft run as FROZEN_KV_MTP), both in its `methods` fact.
- A line that names no method: vLLM detects one from the draft checkpoint (the same chain); an engine without such a
  chain runs the flag's default, read from its parser (SGLang's --speculative-algorithm defaults to None: no
  speculative decoding, the draft model unused).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compat.checks._context import Ctx, replay_detection
from compat.checks._method import accepted_names, method_option, name_location, release_name
from compat.methods import family_of, find_name, get_method


@dataclass(frozen=True)
class Step:
    """One thing the release (or doctor, for --method) does to the name: from, to, why, and where it is decided."""

    before: str | None
    after: str | None
    why: str
    location: str | None = None

    def words(self) -> str:
        return self.why + (f" ({self.location})" if self.location else "")


@dataclass(frozen=True)
class Resolution:
    """The method the user runs, as the release resolves it."""

    engine: str
    given: str | None  # as typed on the line or given to --method; None: neither names one
    source: str  # where `given` comes from (MethodInPlay.source)
    passed: str | None  # the name the release is given (--method's translated to the release's spelling)
    runs_as: str | None  # what the release runs; None: no speculative decoding (or refused)
    steps: tuple[Step, ...] = ()
    refused: str | None = None  # why the release refuses the name, in words (None: it takes it)
    certain: bool = True  # False: a step depends on what doctor cannot see (a detection test it cannot replay)
    detected: bool = False  # the release chose the method itself (no method named, or an explicit one overridden)
    raises: str | None = None  # what the release's own resolution raises for it (vLLM's "draft model is not supported
    raises_at: str | None = None  # yet" NotImplementedError, 0.10 - 0.13), and where

    @property
    def family(self) -> str | None:
        """The family of what the release runs (None: nothing runs, or no family has the name)."""
        match = find_name(self.engine, self.runs_as) if self.runs_as else None
        return match.method.family if match is not None else None

    def to_json(self) -> dict[str, Any]:
        return {"given": self.given, "from": self.source, "passed": self.passed, "runs_as": self.runs_as,
                "steps": [{"from": s.before, "to": s.after, "why": s.why, "location": s.location} for s in self.steps],
                "refused": self.refused, "certain": self.certain, "detected": self.detected, "raises": self.raises,
                "raises_at": self.raises_at}


def resolve(ctx: Ctx) -> Resolution:
    """The method the user runs, as this release resolves it (memoised on the context)."""
    found = ctx.__dict__.get("_resolution")
    if found is None:
        found = ctx.__dict__["_resolution"] = _resolve(ctx)
    return found


def _resolve(ctx: Ctx) -> Resolution:
    given, source = ctx.method.launched, ctx.method.source
    if given is None:
        if ctx.options.launch is None:  # doctor's own line names the family's name in this release
            own = release_name(ctx, ctx.method.family)
            name = own.name if own is not None else None
            return Resolution(ctx.engine, None, source, name, name)
        return _unnamed(ctx, source)
    steps: list[Step] = []
    passed = given if ctx.options.launch is not None else _translated(ctx, given, steps)
    fact = ctx.fact("methods")
    accepted = accepted_names(ctx)
    if accepted is not None and passed not in accepted:
        upper = passed.upper()
        if fact.get("case") == "folded" and upper in accepted:
            steps.append(Step(passed, upper, f"{_release(ctx)} upper-cases it to {upper!r} (from_string)", fact.get("location")))
            passed = upper
        else:
            return Resolution(ctx.engine, given, source, passed, None, tuple(steps),
                              refused=f"{passed!r} is not among the release's methods ({', '.join(accepted)})")
    return _runs(ctx, given, source, passed, steps)


def _translated(ctx: Ctx, given: str, steps: list[Step]) -> str:
    """`doctor --method NAME`: compat's id or the other engine's name, as the release names the family."""
    match = family_of(ctx.engine, given)
    accepted = accepted_names(ctx)
    exact = match is not None and match.how == "engine" and match.name is not None and match.name.name == given
    if match is None or (exact and (accepted is None or given in accepted)):
        return given
    own = release_name(ctx, match.method.family)
    if own is None or own.name == given:
        return given
    whose = {"family": "compat's id", "other": f"{match.other_engine}'s name"}.get(match.how, "another spelling")
    if exact and match.name is not None:  # the engine's own name, from another release (vLLM's "mtp" from 0.11.0)
        whose = f"{ctx.engine}'s name ({match.name.gate()})"
    steps.append(Step(given, own.name, f"{given!r} is {whose} for {match.method.title}: {_release(ctx)} names it "
                      f"{own.name!r}", name_location(ctx, own.name)))
    return own.name


def _runs(ctx: Ctx, given: str, source: str, passed: str, steps: list[Step]) -> Resolution:
    fact = ctx.fact("methods")
    runs = passed
    for alias in fact.get("aliases") or []:
        if isinstance(alias, dict) and alias.get("name") == runs and alias.get("runs_as"):
            steps.append(Step(runs, alias["runs_as"], f"it is an alias: {_release(ctx)} runs it as {alias['runs_as']}",
                              alias.get("location")))
            runs = str(alias["runs_as"])
    entry = (fact.get("methods") or {}).get(runs) if isinstance(fact.get("methods"), dict) else None
    if isinstance(entry, dict) and entry.get("runs_as"):
        steps.append(Step(runs, entry["runs_as"], f"{_release(ctx)} renames it to {entry['runs_as']!r} before it runs",
                          entry.get("location")))
        runs = str(entry["runs_as"])
    certain, detected = True, False
    found = replay_detection(ctx, runs)
    if found is not None and found.get("method") and found["method"] != runs:
        steps.append(Step(runs, found["method"], f"{_release(ctx)}'s auto-detection runs it as {found['method']!r} (it "
                          f"reads the draft checkpoint's path, model_type and architectures, and keeps only "
                          f"{_kept(ctx)})", found.get("location")))
        runs, certain, detected = str(found["method"]), bool(found.get("certain", True)), True
    elif found is not None and not found.get("certain", True):
        certain = False
    runs = _promoted(ctx, runs, passed, steps)
    raises = (found or {}).get("raises")
    return Resolution(ctx.engine, given, source, passed, runs, tuple(steps), certain=certain, detected=detected,
                      raises=str(raises) if raises else None, raises_at=(found or {}).get("location") if raises else None)


def _promoted(ctx: Ctx, runs: str, passed: str, steps: list[Step]) -> str:
    """SGLang: EAGLE/NEXTN with a draft of the kinds the promotion names run as another method (FROZEN_KV_MTP)."""
    archs = ctx.drafter.config.get("architectures") if ctx.drafter.present else None
    archs = archs if isinstance(archs, list) else []
    for promo in ctx.fact("methods").get("promotions") or []:
        if not isinstance(promo, dict) or not (runs in (promo.get("from") or []) or passed in (promo.get("from") or [])):
            continue
        hit = [a for a in archs if a in (promo.get("decided_by") or [])]
        if hit and promo.get("to"):
            steps.append(Step(runs, promo["to"], f"{_release(ctx)} promotes it to {promo['to']} for a {hit[0]} draft "
                              f"({promo.get('when')})", promo.get("location")))
            return str(promo["to"])
    return runs


def _unnamed(ctx: Ctx, source: str) -> Resolution:
    """A launch line that names no method: the release's own default (vLLM detects one; a flag defaults)."""
    if ctx.fact("method_autodetection").get("present"):
        found = replay_detection(ctx, None)
        if found is None or not (found.get("method") or found.get("raises")):
            return Resolution(ctx.engine, None, source, None, None, certain=False, detected=True)
        step = Step(None, found.get("method"), f"{_release(ctx)} detects {found['method']!r} from the draft checkpoint"
                    if found.get("method") else f"{_release(ctx)}'s detection matches nothing in the draft checkpoint",
                    found.get("location"))
        raises = found.get("raises")
        return Resolution(ctx.engine, None, source, None, found.get("method"), (step,), certain=bool(found.get("certain", True)),
                          detected=True, raises=str(raises) if raises else None,
                          raises_at=found.get("location") if raises else None)
    option = method_option(ctx)  # the flag form's (SGLang's --speculative-algorithm); the config form's key is "method"
    flag = ctx.flag(option) if option else None
    if flag is None:
        return Resolution(ctx.engine, None, source, None, None, certain=False)
    default = flag.get("default")
    step = Step(None, None if default is None else str(default),
                f"no {option}: its default is {default!r}" + (": no speculative decoding, the draft model is unused"
                                                                  if default is None else ""), flag.get("location"))
    return Resolution(ctx.engine, None, source, None, None if default is None else str(default), (step,))


def _release(ctx: Ctx) -> str:
    return f"{ctx.engine} {ctx.report.get('version')}"


def _kept(ctx: Ctx) -> str:
    """The methods the release's detection keeps as configured, in words."""
    kept = ctx.fact("method_autodetection").get("explicit_methods") or []
    return ", ".join(repr(m) for m in kept) if kept else "none"


def family_title(engine: str, name: str | None) -> str:
    """The family's title for a name of the release (its own name when no family has it)."""
    match = find_name(engine, name) if name else None
    return get_method(match.method.family).title if match is not None else repr(name)
