"""Doctor checks: one per file, each registered by `@check(...)` (the pyupgrade `_plugins/` pattern).

A check module holds one function that takes a `Ctx` and returns a `Result` (both from
compat.checks, defined in _context.py: the small typed API checks are written against; no check
imports compat.doctor or another check); the decorator names it, once:

    @check("layer-ids", "layer ids: the hidden states this release feeds = the ones the drafter was trained on",
           order=60, needs=("layer ids", "eagle3 targets"), fixes=("patch", "convert"))
    def layer_ids(ctx): ...

- `id`: what --json, the fixes and the tests call it; `title`: the line people read;
- `order`: where it is shown; `needs`: the facts it reads, as terms of the shared vocabulary
  (compat/fact_vocabulary.py); each engine unit's `FACTS` says which of its probe facts provide a term. A term
  the engine does not provide, or whose probe failed on this release: the decorator answers WARN "cannot tell"
  and the check never runs on a guess;
- `fixes`: what may fix it when it fails, tried in this order by compat/doctor/fixes.py:
  "patch" (the release's patches applied in memory, then the check again), "convert" (the drafter
  a conversion would write, then the check again), "release" (a release the check itself names as
  `Result.release`, or one the known issues name), "line" (doctor --launch: the check's `Result.edits`
  applied to the user's line, then the check again on it);
- `blocks`: fix kinds that cannot help any check while this one fails (no patch makes a release
  load an architecture it does not have), so none of that kind is offered;
- `when`: "launch" for a check of the user's launch line (`doctor --launch`): it runs only when there is
  one (the launch command doctor builds itself is the launch-command check's); "speculators" for a check of
  the release's translation of a speculators-format drafter: it runs only on one;
- `methods`: the method families (compat.methods) it checks, `ANY_METHOD` for every one; the default is EAGLE-3's,
  what the checks were first written for. Doctor runs the checks of the family in play (`ctx.method`).

The registry fills itself: `all_checks()` imports every module here whose name does not start
with `_`, so adding a check is adding a file (and its offline test in tests/checks/). Modules
starting with `_` hold what several checks share (_drafter.py, _whitelist.py) and what doctor
shares with them (_context.py, _launch.py: the launch command the launch-command check validates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from compat import engines
from compat.fact_vocabulary import unknown_terms

from compat.checks._context import (  # noqa: F401  (the API checks and doctor use, from here)
    DEFAULT_SPEC_TOKENS, DEFAULT_TOPK, DRAFTER_FIELDS, FAIL, PASS, PLATFORMS, WARN, ConvertWith, Ctx, Drafter, LaterRelease, MethodInPlay,
    Options, Result, Verdict, VenvQuestion, drafter_reads,
)
# the launch doctor prints is `suggested_launch`: the check module launch_command.py, once imported, is the package's
# attribute `launch_command`, so a function of that name here would be replaced by it
from compat.checks._launch import launch_command as suggested_launch, launch_from_line  # noqa: F401
from compat.checks._launch_args import served_model  # noqa: F401
from compat.checks._resolve import resolve as resolve_method  # noqa: F401  (the method as the release resolves it)
from compat.core.registry import Contract, Field, Folder

FIX_KINDS = ("patch", "convert", "release", "line")
ANY_METHOD = ("*",)  # a check of every method family (the launch line, the target's architecture, the draft's dtype)
EAGLE3_CHECKS = ("eagle3",)


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    order: int
    needs: tuple[str, ...]
    fixes: tuple[str, ...]
    func: Callable[[Ctx], Result]
    blocks: tuple[str, ...] = ()
    when: str = ""
    methods: tuple[str, ...] = EAGLE3_CHECKS

    def applies(self, ctx: Ctx) -> bool:
        if self.when == "launch" and ctx.options.launch is None:
            return False
        if self.when == "speculators" and "speculators_model_type" not in ctx.drafter.config:
            return False  # only a speculators-format drafter is translated by the release
        return self.methods == ANY_METHOD or ctx.method.family in self.methods

    def unread_facts(self, engine: str) -> str | None:
        """The terms this check needs that `engine` does not provide (its unit's FACTS lacks them): a check run
        without its facts would answer with another engine's assumptions."""
        provided = engines.get(engine).facts
        missing = [term for term in self.needs if term not in provided]
        return ", ".join(missing) if missing else None

    def needed_facts(self, engine: str) -> tuple[str, ...]:
        """The probe keys of `engine` that provide this check's terms, in order (each once)."""
        provided = engines.get(engine).facts
        return tuple(dict.fromkeys(key for term in self.needs for key in provided.get(term, ())))

    def __call__(self, ctx: Ctx) -> Result:
        unread = self.unread_facts(ctx.engine)
        if unread is not None:
            return self._answer(Result(WARN, f"cannot tell: this check reads {unread}, which compat does not read "
                                             f"from {engines.get(ctx.engine).display_name} yet", unread=True))
        for key in self.needed_facts(ctx.engine):
            error = ctx.probe_error(key)
            if error:
                return self._answer(Result(WARN, f"cannot tell: probe {key} failed on this release ({error})"))
        return self._answer(self.func(ctx))

    def _answer(self, result: Result) -> Result:
        result.check, result.title = self.id, self.title
        return result


_REGISTRY: dict[str, Check] = {}

# What `@check(...)` takes, checked when a check module is imported (the decorator's arguments are its fields).
CONTRACT = Contract("check", (
    Field("id", str, doc="what --json, the fixes and the tests call it"),
    Field("title", str, doc="the line people read"),
    Field("order", int, doc="where it is shown (lower first)"),
    Field("needs", tuple, default=(), doc="the facts it reads: terms of compat/fact_vocabulary.py (each engine's FACTS "
          "maps them to its probe facts)"),
    Field("fixes", tuple, default=(), doc=f"what may fix it, tried in this order: of {FIX_KINDS}"),
    Field("blocks", tuple, default=(), doc="fix kinds no other check is offered while this one fails"),
    Field("when", str, default="", doc='"launch": runs only on a launch line (doctor --launch); "speculators": only on a '
          'speculators-format drafter'),
    Field("methods", tuple, default=EAGLE3_CHECKS, doc="the method families it checks (ANY_METHOD: every one)"),
))


def check(id: str, title: str, *, order: int, needs: tuple[str, ...] = (), fixes: tuple[str, ...] = (),
          blocks: tuple[str, ...] = (), when: str = "", methods: tuple[str, ...] = EAGLE3_CHECKS):
    """Register the decorated function as the check `id`."""
    unknown = [f for f in (*fixes, *blocks) if f not in FIX_KINDS]
    if unknown:
        raise ValueError(f"check {id}: unknown fix kinds {unknown} (known: {FIX_KINDS})")
    unknown_needs = unknown_terms(needs)
    if unknown_needs:
        raise ValueError(f"check {id}: needs {unknown_needs}, not terms of compat/fact_vocabulary.py (add them there)")
    if when not in ("", "launch", "speculators"):
        raise ValueError(f"check {id}: when={when!r} (known: '', 'launch', 'speculators')")

    def register(func: Callable) -> Callable:
        CONTRACT.values(func.__module__, {"id": id, "title": title, "order": order, "needs": needs, "fixes": fixes,
                                          "blocks": blocks, "when": when, "methods": methods})
        known = _REGISTRY.get(id)
        if known is not None and known.func.__module__ != func.__module__:
            raise RuntimeError(f"two checks claim the id {id}: {known.func.__module__} and {func.__module__}")
        _REGISTRY[id] = Check(id, title, order, tuple(needs), tuple(fixes), func, tuple(blocks), when, tuple(methods))
        return func

    return register


FOLDER = Folder(__name__)  # every module here not starting with `_`: importing one registers its check


def all_checks() -> list[Check]:
    """Every check, in the order the doctor shows them."""
    FOLDER.rules()
    return sorted(_REGISTRY.values(), key=lambda c: (c.order, c.id))


def get_check(id: str) -> Check:
    FOLDER.rules()
    return _REGISTRY[id]
