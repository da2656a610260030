"""What one release's row reuses: its diagnosis and the readings of an ask (the drafter read again as the user might
answer, compat/doctor/diagnose.py `answers`) share the probe report, the patched overlays and every check's answer.

A check's answer depends on its context: the probe report, the target, the options, the release finder and the class
loaders (the same objects within a row, compared by identity), and the drafter, of which it is known which fields the check read
(`compat.checks.drafter_reads`). A check asked again in a context with the same objects and the same values in the
drafter fields it read gives the answer it gave (a copy: the fixes set fields of the answer they are given); so a
reading runs again only the checks that read what its answer changes (the layer-id reading: the checks that read the
drafter's settled ids), found from what each check read, with no list to keep up to date. The fixes' own runs (a
check on the patched overlay, on the converted drafter) are answered the same way.
"""

from __future__ import annotations

import copy
import json
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

from compat.checks import Ctx, Result, drafter_reads

if TYPE_CHECKING:
    from compat.checks import Check
    from compat.core.tree import EngineTree

T = TypeVar("T")
_ACTIVE: ContextVar[Reuse | None] = ContextVar("compat_doctor_reuse", default=None)


class Reuse:
    """One row's shared reports, overlays and check answers."""

    def __init__(self) -> None:
        self._answers: dict[tuple[int, ...], list[tuple[dict[str, Any], Result]]] = {}
        self._of_trees: dict[tuple[int, Callable[[EngineTree], Any]], Any] = {}
        self._overlays: dict[tuple[int, str, str], tuple[EngineTree, dict[str, Any]] | None] = {}
        self._made: dict[tuple[Any, ...], Any] = {}
        self._held: list[Any] = []  # the objects whose ids are keys above, kept alive so no id is given again

    def answer(self, check: Check, ctx: Ctx) -> Result:
        key = (id(check), id(ctx.report), id(ctx.target), id(ctx.options), id(ctx.releases), id(ctx.loaders))
        drafter = ctx.drafter
        seen = self._answers.get(key)
        for reads, result in seen or ():
            if all(_same(getattr(drafter, name), value) for name, value in reads.items()):
                return replace(result)
        with drafter_reads() as read:
            result = check(ctx)
        if seen is None:
            seen = self._answers[key] = []
            self._held.append((check, ctx.report, ctx.target, ctx.options, ctx.releases, ctx.loaders))
        seen.append(({name: _kept(getattr(drafter, name)) for name in sorted(read)}, replace(result)))
        return result

    def of_tree(self, tree: EngineTree, build: Callable[[EngineTree], T]) -> T:
        """What `build` makes of the tree (its probe report, its class loaders), made once for the row."""
        key = (id(tree), build)
        if key not in self._of_trees:
            self._of_trees[key] = build(tree)
            self._held.append(tree)
        return self._of_trees[key]

    def remember(self, key: tuple[Any, ...], held: Any, make: Callable[[], T]) -> T:
        """make() once for the row per `key` (whose ids are of `held`, kept alive with it)."""
        if key not in self._made:
            self._made[key] = make()
            self._held.append(held)
        return self._made[key]

    def overlay(self, tree: EngineTree, patch_id: str, options: dict[str, Any],
                make: Callable[[], tuple[EngineTree, dict[str, Any]] | None]) -> tuple[EngineTree, dict[str, Any]] | None:
        """The overlay `patch_id` with `options` makes of `tree` and its report (None: it changes nothing), made once."""
        key = (id(tree), patch_id, json.dumps(options, sort_keys=True, default=str))
        if key not in self._overlays:
            self._overlays[key] = made = make()
            self._held.append((tree, made))
        return self._overlays[key]


def _kept(value: Any) -> Any:
    """What a field held when the check read it (a dict or list copied: the drafter's may change later)."""
    return copy.deepcopy(value) if isinstance(value, (dict, list)) else value


def _same(now: Any, then: Any) -> bool:
    if now is then:
        return True
    try:
        return type(now) is type(then) and bool(now == then)
    except Exception:  # noqa: BLE001 - what cannot be compared is taken as changed
        return False


def active() -> Reuse | None:
    return _ACTIVE.get()


@contextmanager
def reusing() -> Iterator[Reuse]:
    """Within: the diagnoses share one Reuse (a row: the diagnosis, then the readings of its ask)."""
    reuse = _ACTIVE.get()
    if reuse is not None:
        yield reuse
        return
    reuse = Reuse()
    token = _ACTIVE.set(reuse)
    try:
        yield reuse
    finally:
        _ACTIVE.reset(token)


def run(check: Check, ctx: Ctx) -> Result:
    """The check's answer in this context: reused within a row, else run."""
    reuse = _ACTIVE.get()
    return reuse.answer(check, ctx) if reuse is not None else check(ctx)
