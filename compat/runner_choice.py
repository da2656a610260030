"""Which model runner a release takes on a platform, from its own selection (the `model_runners` fact), and what it
does with a speculative method there: refuses it (the CPU runner's assert before vLLM 0.20; the V2 runner's
NotImplementedError for a method its `init_speculator` does not build), or runs it.

A choice the release makes from what doctor cannot know (a VllmConfig property that looks at the target's MoE-ness and
the method, vLLM 0.2x; a platform hook) is left open: every runner it may take is kept, and a check judges the drafter
by each of them, never by one the release would not take. Engines without such a fact (SGLang: one worker per
algorithm, in its `methods` fact) answer None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Runner:
    """One model runner the release may build for the platform."""

    cls: str
    module: str
    lineage: str | None  # "v1" / "v2": whose layer-id reader feeds the drafter (aux_layer_ids' runner names)
    location: str | None  # where the worker builds it
    refuses: dict[str, Any] | None = None  # {"message", "raises", "location"}: it refuses speculative decoding

    def refusal(self, method: str | None, v2: dict[str, Any] | None) -> tuple[str, str | None] | None:
        """(what it raises, where) for `method` on this runner; None: it runs it."""
        if self.refuses:
            return f"{self.refuses.get('raises')}: {self.refuses.get('message')}", self.refuses.get("location")
        methods = (v2 or {}).get("methods")
        if self.lineage == "v2" and methods is not None and method is not None and method not in methods:
            return (f"{v2.get('raises') if v2 else None}: {method} is not supported yet (its init_speculator builds "
                    f"{', '.join(methods)})", (v2 or {}).get("location"))
        return None


@dataclass(frozen=True)
class Choice:
    """The runners a release may take on a platform, and whether its own selection decides between them here."""

    platform: str
    worker: str | None
    worker_location: str | None
    runners: tuple[Runner, ...]
    decided: bool
    why: str  # how the release chooses, in words (with its lines)

    @property
    def lineages(self) -> set[str] | None:
        """The layer-id readers that may feed the drafter (None: not known, judge by all)."""
        found = {r.lineage for r in self.runners if r.lineage}
        return found if found and len(found) == len({r.lineage for r in self.runners}) else None


def choose(report: dict[str, Any], platform: str) -> Choice | None:
    """The release's choice of model runner on `platform` (None: the engine has no model_runners fact)."""
    fact = report.get("model_runners")
    if not isinstance(fact, dict) or not fact.get("present"):
        return None
    entry = (fact.get("platforms") or {}).get(platform)
    if not isinstance(entry, dict):
        return Choice(platform, None, None, (), True, f"the release has no in-tree {platform} platform (vllm/platforms/)")
    built = [_runner(r, fact) for r in entry.get("runners") or []]
    switch = entry.get("switch") or {}
    variants = [r for r, raw in zip(built, entry.get("runners") or []) if raw.get("when") and
                "v2_model_runner" not in str(raw.get("when")) and raw.get("branch") == "if"]
    kept = [r for r in built if r not in variants] or built
    why = f"{entry.get('worker')} ({entry.get('location')})"
    if variants:
        why += "; " + ", ".join(f"{v.cls} only when {_when(entry, v)}" for v in variants)
    switched = [raw for raw in entry.get("runners") or [] if "v2_model_runner" in str(raw.get("when") or "")]
    if not switched:
        return Choice(platform, entry.get("worker"), entry.get("location"), tuple(kept), True, why)
    env = switch.get("env") or {}
    if "default" in env:
        branch = "if" if env.get("default") else "else"
        taken = tuple(r for r, raw in zip(built, entry.get("runners") or []) if raw in switched and raw.get("branch") == branch)
        return Choice(platform, entry.get("worker"), entry.get("location"), taken, True,
                      why + f"; {switch.get('text')} is {env.get('name')}, unset by default ({env.get('default')}, "
                      f"{env.get('location')}): set it to 1 for the V2 runner")
    return Choice(platform, entry.get("worker"), entry.get("location"), tuple(kept), False,
                  why + f"; {switch.get('text')} is {switch.get('set_from')} ({switch.get('location')}), which looks at the "
                  "target and the method: either runner may run it")


def _runner(raw: dict[str, Any], fact: dict[str, Any]) -> Runner:
    known = (fact.get("runners") or {}).get(f"{raw.get('module')}.{raw.get('class')}") or {}
    return Runner(str(raw.get("class")), str(raw.get("module")), raw.get("lineage"), raw.get("location"), known.get("refuses"))


def _when(entry: dict[str, Any], runner: Runner) -> str:
    return next((str(r.get("when")) for r in entry.get("runners") or [] if r.get("class") == runner.cls), "?")


def feeds_for(feeds: list[Any], choice: Choice | None) -> list[Any]:
    """The layer-id feeds (compat.aux_layers.Feed, by "runner v1"/"runner v2") of the runners the release takes here."""
    lineages = choice.lineages if choice is not None else None
    if not lineages:
        return feeds
    kept = [f for f in feeds if not str(f.by).startswith("runner ") or str(f.by).split(" ", 1)[1] in lineages]
    return kept or feeds
