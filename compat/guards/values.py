"""The values the guard reader computes with: Python values, the release's objects read attribute by attribute, and
the unknown.

- `Unknown(why)`: what cannot be told, with the expression (or call) it comes from: what doctor names when it
  cannot say whether a guard fires. Never equal to anything, never true or false.
- `Obj`: an object of the release's (the speculative config being built, the server's arguments, a model's
  config) whose attributes are known one by one. An attribute nobody set reads as `Unknown`, unless the object is
  `closed` (a config.json: a key the file lacks is absent, and `getattr(cfg, key, default)` gives the default).
  A wrapper (`fallback`) reads through to the object it wraps for what it does not set itself.
- `join(a, b)`: one value for two paths that met (an `if` whose test is unknown): the value when both paths
  agree, else `Unknown`.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 8  # objects nested deeper than this are compared as unknown (a cycle, or a graph no guard reads)


class Unknown:
    """A value that cannot be told, and why (the expression or call it comes from)."""

    __slots__ = ("why",)

    def __init__(self, why: str = "") -> None:
        self.why = why

    def __repr__(self) -> str:
        return f"Unknown({self.why!r})"

    def __deepcopy__(self, memo: dict) -> Unknown:
        return self


class OneOf(Unknown):
    """A value known to be one of a few plain values (two paths that set 2048 and 8192): unknown everywhere, except
    where every one of them gives the same answer (`x % 1 == 0`, `x > 1000`)."""

    __slots__ = ("values",)

    def __init__(self, values: tuple, why: str = "") -> None:
        super().__init__(why)
        self.values = values

    def __repr__(self) -> str:
        return f"OneOf({self.values!r})"


MAX_ONE_OF = 8
_PLAIN = (type(None), bool, int, float, str)


def one_of(values: Any, why: str = "") -> Any:
    """The value when all agree, else OneOf (Unknown past MAX_ONE_OF or when one is not plain)."""
    flat: list = []
    for value in values:
        for item in (value.values if isinstance(value, OneOf) else (value,)):
            if isinstance(item, Unknown) or not isinstance(item, _PLAIN):
                return Unknown(why)
            if not any(type(item) is type(f) and item == f for f in flat):
                flat.append(item)
    if len(flat) == 1:
        return flat[0]
    return OneOf(tuple(flat), why) if len(flat) <= MAX_ONE_OF else Unknown(why)


def is_unknown(value: Any) -> bool:
    return isinstance(value, Unknown)


def first_unknown(values: Any) -> Unknown | None:
    return next((v for v in values if isinstance(v, Unknown)), None)


class PythonRaises(Exception):
    """What Python itself raises evaluating the release's code on known values (`None > 1`: TypeError): the walk's
    refusal at that statement, as the release would raise there."""

    def __init__(self, exception: str, message: str) -> None:
        super().__init__(message)
        self.exception, self.message = exception, message


class Obj:
    """An object whose attributes are known one by one (`label` says what it is, in messages)."""

    def __init__(self, label: str, attrs: dict[str, Any] | None = None, *, closed: bool = False,
                 fallback: Obj | None = None, kind: str = "") -> None:
        self.label = label
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.closed = closed  # every attribute it has is in attrs (a config.json)
        self.fallback = fallback  # what it wraps: read for what attrs does not hold
        self.kind = kind  # what built it ("model_config", "hf_config", ...), for the rules that read it

    def __repr__(self) -> str:
        return f"<{self.label}>"

    def has(self, name: str) -> bool | None:
        """Does it have `name` (None: cannot tell)?"""
        if name in self.attrs:
            return True
        if self.fallback is not None:
            return self.fallback.has(name)
        return False if self.closed else None

    def get(self, name: str, default: Any = None, *, with_default: bool = False) -> Any:
        if name in self.attrs:
            return self.attrs[name]
        if self.fallback is not None:
            return self.fallback.get(name, default, with_default=with_default)
        if self.closed and with_default:
            return default
        return Unknown(f"{self.label}.{name}")

    def set(self, name: str, value: Any) -> None:
        self.attrs[name] = value

    def to_dict(self) -> dict[str, Any]:
        """Its attributes as a dict (what `config.to_dict()` gives), the wrapped object's first."""
        base = self.fallback.to_dict() if self.fallback is not None else {}
        return {**base, **self.attrs}


def same(a: Any, b: Any, depth: int = 0) -> bool:
    """Do two values agree (objects attribute by attribute)?"""
    if a is b:
        return True
    if isinstance(a, Unknown) or isinstance(b, Unknown) or depth > MAX_DEPTH:
        return False
    if isinstance(a, Obj) and isinstance(b, Obj):
        return (a.label == b.label and a.closed == b.closed and a.attrs.keys() == b.attrs.keys()
                and all(same(a.attrs[k], b.attrs[k], depth + 1) for k in a.attrs)
                and (a.fallback is b.fallback or (a.fallback is not None and b.fallback is not None
                                                  and same(a.fallback, b.fallback, depth + 1))))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y, depth + 1) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], depth + 1) for k in a)
    if isinstance(a, Obj) or isinstance(b, Obj):
        return False
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # a value whose == raises is no agreement
        return False


def join(a: Any, b: Any, why: str, depth: int = 0) -> Any:
    """One value for two paths that met: theirs when they agree; a few plain values, one of them; objects joined
    attribute by attribute."""
    if same(a, b):
        return a
    if all(isinstance(v, (OneOf, *_PLAIN)) for v in (a, b)):
        return one_of((a, b), why)
    if isinstance(a, Obj) and isinstance(b, Obj) and a.label == b.label and depth <= MAX_DEPTH:
        out = Obj(a.label, closed=a.closed and b.closed, kind=a.kind,
                  fallback=a.fallback if a.fallback is b.fallback or a.fallback is None or b.fallback is None
                  or same(a.fallback, b.fallback) else None)
        for key in a.attrs.keys() | b.attrs.keys():
            left = a.attrs[key] if key in a.attrs else a.get(key)
            right = b.attrs[key] if key in b.attrs else b.get(key)
            out.attrs[key] = join(left, right, f"{why}.{key}" if why else key, depth + 1)
        return out
    return Unknown(why)
