"""What the engine checked at a raise, in words, and whether the user's input passes that check in other releases.

The error_sites probe records each raise's guard (probes/_guards.py): the condition, when it raises, and the literal
values of the names it compares (`eagle3_target_supported = ['llama', ...]` at its file and line). The message the
user has gives the values of its holes (`Got ...model_type='kimi_k2'`), each hole an expression of the code
(`self.target_model_config.hf_text_config.model_type`). With both, the condition is evaluated by the guard reader doctor
shares (compat/guards/expressions.py, never `eval`). What it cannot know is unknown; in an `and`, a part that is
unknown is taken as it was when the engine raised.

Across releases (`first_passing`), the same check is found in each later release by the function that makes it and
the hole expression the user's value came from; the first release whose check lets the value pass, or that no
longer has the check, is found by bisection, the way doctor finds the release a fact arrives in.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from compat.explain.sites import Site, SiteIndex
from compat.guards.expressions import Evaluator, parse
from compat.guards.values import Unknown

MAX_SHOWN = 12  # items of a compared list printed


@dataclass(frozen=True)
class Check:
    """A site's guard with the user's values."""

    site: Site
    test: str
    raises_when: bool
    names: dict  # name -> {"value", "at"}
    values: dict  # hole expression -> the user's value (from the message)

    def holds(self, names: dict | None = None) -> bool | None:
        """Does the engine raise for these values (True), let them pass (False), or cannot it be told (None)?"""
        known = {name: entry["value"] for name, entry in (names if names is not None else self.names).items()}
        known.update(self.values)
        try:
            result = Evaluator(known, and_as_raised=True).value(parse(self.test))
        except (SyntaxError, RecursionError, ValueError):
            return None
        if isinstance(result, Unknown):
            return None
        return bool(result) == self.raises_when

    def describe(self) -> str:
        when = "when" if self.raises_when else "unless"
        verb = "logs it" if self.site.kind == "log" else "raises"
        guard = self.site.guard or {}
        line = guard.get("line", self.site.line)
        caught = guard.get("caught")
        if caught and self.test == "True":
            out = f"{self.site.function or self.site.file} {verb} in `{caught['clause']}:` ({self.site.file}:" \
                  f"{caught['line']}): what it tried failed"
        else:
            out = f"{self.site.function or self.site.file} {verb} {when} `{self.test}` ({self.site.file}:{line})"
            if caught:
                out += f", in `{caught['clause']}:` ({self.site.file}:{caught['line']}): what it tried failed"
        for name, entry in self.names.items():
            out += f"; {name} = {_shown(entry['value'])} ({entry['at']})"
        for expr, value in self.values.items():
            out += f"; here {expr} = {value!r} (from the message)"
        return out


def unguarded(site: Site, tb=None, engine: str = "") -> str:
    """What the source says of a raise no `if` or `except` of its function guards: it raises whenever the function
    reaches it, so the decision was the caller's (a traceback's frame above it names the call); a bare
    NotImplementedError so raised is a method the class the engine used does not provide."""
    function = site.function or site.file
    if site.exception == "NotImplementedError" and site.literal_length < 16:  # a base method's bare raise
        owner, _, method = function.rpartition(".")
        out = (f"{function} is not implemented{f' by {owner}' if owner else ''} ({site.location}, no `if` around the "
               f"raise): the class the engine used for this does not provide {method or function}")
    else:
        out = f"{function} raises it whenever it runs to {site.location} (no `if` or `except` around the raise)"
    caller = _caller(site, tb, engine) if tb is not None else None
    return out + (f"; the call that decided it: {caller}" if caller else "; what called it decided")


def _caller(site: Site, tb, engine: str) -> str | None:
    """The engine frame above the raise's in a traceback: `file:line in function (`code`)`."""
    frames = tb.engine_frames(engine)
    for (frame, relpath), (above, above_rel) in zip(frames[1:][::-1], frames[:-1][::-1]):
        if relpath == site.file and site.covers(relpath, frame.line):
            code = f" (`{above.code}`)" if above.code else ""
            return f"{above_rel}:{above.line} in {above.function}{code}"
    return None


def check_of(site: Site | None, message: str) -> Check | None:
    """The site's guard, with the values the message gives its holes."""
    if site is None or not site.guard:
        return None
    return Check(site, site.guard["test"], bool(site.guard["raises_when"]), dict(site.guard.get("names") or {}),
                 values_in(site, message))


def values_in(site: Site, message: str) -> dict:
    """hole expression -> the value the message shows there (a `{x=}` hole shows `x=<repr>`)."""
    if not site.holes or site.capturing is None:
        return {}
    found = site.capturing.search(message)
    if found is None or len(found.groups()) != len(site.holes):
        return {}
    values = {}
    for expr, text in zip(site.holes, found.groups()):
        if expr in (site.guard or {}).get("names", {}):
            continue  # the code's own value (the list), not the user's
        values[expr] = _literal(text.strip().rstrip(".,;"))
    return values


_LEADING = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|\[[^\]]*\]|\([^)]*\)|\S+""")


def _literal(text: str):
    """The Python value a hole shows (`'kimi_k2'`, `3`, `['a']`), read with `ast.literal_eval`; the message may go
    on after it (pydantic adds ` [type=value_error, ...]`): then its first literal; else the text itself."""
    for candidate in (text, (_LEADING.match(text) or [text])[0]):
        try:
            return ast.literal_eval(candidate)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            continue
    return text


def _shown(value) -> str:
    if isinstance(value, list) and len(value) > MAX_SHOWN:
        return repr(value[:MAX_SHOWN])[:-1] + f", ... ({len(value)} in all)]"
    return repr(value)


# -- across releases --------------------------------------------------------------------------------------------
def same_check(check: Check, index: SiteIndex) -> Site | None:
    """The site of another release that makes this check: raised (or logged) by the same function, of the same
    exception, its guard comparing the expression the user's value came from (the message may have changed)."""
    function = check.site.function
    wanted = set(check.values)
    for site in index.sites:
        if site.function != function or site.exception != check.site.exception or not site.guard \
                or (site.kind == "log") != (check.site.kind == "log"):
            continue
        if not wanted or any(expr in site.guard["test"] for expr in wanted):
            return site
    return None


def passes_in(check: Check, index: SiteIndex) -> bool | None:
    """Does the user's value pass this check in the release of `index` (True: passes, or the check is gone)?"""
    site = same_check(check, index)
    if site is None or not site.guard:
        return True
    guard = site.guard
    later = Check(site, guard["test"], bool(guard["raises_when"]), dict(guard.get("names") or {}), check.values)
    holds = later.holds()
    return None if holds is None else not holds


def first_passing(check: Check, later: list[str], index_of: Callable[[str], SiteIndex | None]) -> tuple[str | None, str]:
    """(the first of the `later` releases (ascending) where the value passes, how it passes), by bisection; (None,
    why) when none does or it cannot be told."""
    if not check.values or check.holds() is not True:
        return None, "the message does not give the value the check compares" if not check.values else \
            "the check cannot be evaluated from the code alone"

    def passes(version: str) -> bool:
        index = index_of(version)
        return bool(index is not None and passes_in(check, index))

    if not later or not passes(later[-1]):
        return None, f"no release up to {later[-1]} lets it pass" if later else "no later release"
    low, high = 0, len(later) - 1
    while low < high:
        mid = (low + high) // 2
        if passes(later[mid]):
            high = mid
        else:
            low = mid + 1
    index = index_of(later[low])
    site = same_check(check, index) if index is not None else None
    how = "no longer makes this check" if site is None else f"its check at {site.location} lets it pass"
    return later[low], how


def plain(test: str) -> str:
    """A guard as a reader takes it in: `self.` dropped."""
    return re.sub(r"\bself\.", "", test)
