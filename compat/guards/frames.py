"""A path of the walk through one function (`Frame`: its locals, whether every open path is this one, the unknown
tests it took and the tests on the way), where paths meet (`merge`), and how a block ends (`Flow`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from compat.guards.outcome import Raised
from compat.guards.program import Function
from compat.guards.values import Unknown, join


class Frame:
    def __init__(self, function: Function, locals_: dict[str, Any], certain: bool, why: tuple[str, ...]) -> None:
        self.function = function
        self.locals = locals_
        self.certain = certain  # every path not ended by a raise is this one
        self.why = why
        self.tests: tuple[str, ...] = ()  # the tests of the ifs this path took in the function, as taken
        self.line = function.line  # the statement being run

    def fork(self, why: str) -> Frame:
        out = Frame(self.function, copy.deepcopy(self.locals), False, self.why + ((why,) if why else ()))
        out.tests, out.line = self.tests, self.line
        return out


def merge(frames: list[Frame], certain: bool, why: tuple[str, ...]) -> Frame:
    out = frames[0]
    for other in frames[1:]:
        names = out.locals.keys() | other.locals.keys()
        out = Frame(out.function, {n: join(out.locals.get(n, Unknown(n)), other.locals.get(n, Unknown(n)), n) for n in names},
                    False, out.why)
    out.certain, out.why = certain, why
    return out


@dataclass
class Flow:
    normal: Frame | None
    returns: list[tuple[Frame, Any]] = field(default_factory=list)
    breaks: list[Frame] = field(default_factory=list)
    continues: list[Frame] = field(default_factory=list)
    raised: Raised | None = None  # every path of the block raised: the first raise

    @property
    def left(self) -> bool:
        return bool(self.returns or self.breaks or self.continues)


