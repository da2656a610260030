"""What a walk of the release's validation answers (statements.py walks, calls.py follows the calls):

- `Site`: a raise or assert of the release, its message as it would read;
- `Raised`: a raise reached, with the tests on the way (its guard), what it reads and what was unknown;
- `Outcome`: the refusal (every path open raised), the raises that may happen, the calls not followed;
- `Rules`: what the caller models (calls by name, names); `FunctionRef`/`Native`: functions held as values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Site:
    """A raise or assert of the release, with its message as it would read (holes the values fill, filled)."""

    file: str
    line: int
    function: str
    exception: str | None
    message: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"location": self.location, "function": self.function, "exception": self.exception, "message": self.message}


@dataclass(frozen=True)
class Raised:
    site: Site
    unknown: tuple[str, ...] = ()  # the tests left unknown on the way (empty: every path not raised before gets here)
    alternatives: tuple[Site, ...] = ()  # a refusal reached by more than one path: the others
    guard: tuple[str, ...] = ()  # the tests of the ifs around the raise in its function, as taken (and its assert's)
    reads: tuple[str, ...] = ()  # the attributes of the object validated that the guard reads (`self.x` -> x)
    compared: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)  # x -> what it is compared with

    def to_json(self) -> dict[str, Any]:
        out = self.site.to_json()
        if self.unknown:
            out["unknown"] = list(self.unknown)
        if self.alternatives:
            out["or"] = [s.to_json() for s in self.alternatives]
        if self.guard:
            out["guard"] = list(self.guard)
        return out


@dataclass
class Outcome:
    refused: Raised | None = None
    maybe: list[Raised] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)  # calls not followed whose effects are unknown
    steps: int = 0
    result: Any = None

    @property
    def verdict(self) -> str:
        return "refused" if self.refused is not None else "unknown" if self.maybe else "passes"


@dataclass
class Rules:
    """What the caller models: calls by name (`ModelConfig`, `is_cuda`), and names (`current_platform`)."""

    calls: dict[str, Callable[..., Any]] = field(default_factory=dict)
    names: dict[str, Any] = field(default_factory=dict)
    extra_keys: str | None = None  # "forbid": a constructor of the program refuses a keyword that is no field
    first: frozenset[str] = frozenset()  # calls modelled even where the program holds the function (a view of the args)


class Refused(Exception):
    """Raised through the walk when a raise ends every path still open."""

    def __init__(self, raised: Raised) -> None:
        self.raised = raised


class FunctionRef:
    """A function of the program used as a value (`hf_overrides=SpeculativeConfig.hf_config_override`)."""

    def __init__(self, key: str) -> None:
        self.key = key

    def __repr__(self) -> str:
        return self.key

    def __deepcopy__(self, memo: dict) -> FunctionRef:
        return self


class Native:
    """A method of a modelled object, in Python (`model_config.get_vocab_size()`)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __deepcopy__(self, memo: dict) -> Native:
        return self


