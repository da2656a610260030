"""A JSON document whose values are decoded when first read: a probe report, of which doctor reads a few facts.

`LazyDict` is a dict (isinstance, json.dumps, ==, dict(...), {**...} and pickling see the decoded values) that holds
a `Deferred` in place of each value not read yet; reading the key (`[]`, get, items, values, ...) decodes it and keeps
the value. `dumps_indented(doc)` is `json.dumps(doc, indent=2)` that copies a deferred value's text instead of
decoding and encoding it again (`compat probe --json` prints explain's raise sites, ~1 MB, without decoding them).
"""

from __future__ import annotations

import json
from collections.abc import ItemsView, ValuesView

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator, TextIO

__all__ = ["Deferred", "LazyDict", "dumps_indented", "write_indented"]


class Deferred:
    """A value not decoded yet: `load()` decodes it (once), `text()` is its JSON as `json.dumps(value, indent=2)` writes
    it one level deep."""

    __slots__ = ("_load", "_text", "_value", "_loaded")

    def __init__(self, load: Callable[[], Any], text: Callable[[], str]) -> None:
        self._load, self._text = load, text
        self._value: Any = None
        self._loaded = False

    def load(self) -> Any:
        if not self._loaded:
            self._value, self._loaded = self._load(), True
        return self._value

    @property
    def loaded(self) -> bool:
        return self._loaded

    def text(self) -> str:
        return self._text()

    def __eq__(self, other: object) -> bool:  # a dict compared with a LazyDict's storage compares values
        return self.load() == (other.load() if isinstance(other, Deferred) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.load())


class LazyDict(dict):
    """A dict whose `Deferred` values are decoded on first read (and then held as plain values)."""

    def __getitem__(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if type(value) is Deferred:
            value = value.load()
            dict.__setitem__(self, key, value)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if dict.__contains__(self, key) else default

    def __iter__(self) -> Iterator[Any]:  # defined here so that dict(...) and {**...} read values through __getitem__
        return dict.__iter__(self)

    def items(self) -> ItemsView:  # type: ignore[override]
        return ItemsView(self)

    def values(self) -> ValuesView:  # type: ignore[override]
        return ValuesView(self)

    def pop(self, key: Any, *default: Any) -> Any:
        if dict.__contains__(self, key):
            value = self[key]
            dict.__delitem__(self, key)
            return value
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        key = next(reversed(dict.keys(self)))
        return key, self.pop(key)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self[key]
        dict.__setitem__(self, key, default)
        return default

    def copy(self) -> LazyDict:
        return LazyDict(dict.items(self))  # the same Deferreds: each is decoded once for both

    def plain(self) -> dict[Any, Any]:
        return {key: self[key] for key in dict.keys(self)}

    def __eq__(self, other: object) -> bool:
        return self.plain() == (other.plain() if isinstance(other, LazyDict) else other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None

    def __or__(self, other: Any) -> dict:
        return {**self, **other}

    def __ror__(self, other: Any) -> dict:
        return {**other, **self}

    def __repr__(self) -> str:
        return repr(self.plain())

    def __reduce__(self) -> tuple:  # copy, deepcopy and pickle see a plain dict
        return dict, (self.plain(),)

    def deferred(self, key: Any) -> Deferred | None:
        """The key's value when it was never decoded (its text can be copied), else None."""
        value = dict.__getitem__(self, key)
        return value if type(value) is Deferred and not value.loaded else None


def dumps_indented(doc: dict) -> str:
    """`json.dumps(doc, indent=2)`, the text of `doc`'s deferred values copied rather than encoded again."""
    if not isinstance(doc, LazyDict) or not doc:
        return json.dumps(doc, indent=2)
    import io

    out = io.StringIO()
    write_indented(doc, out)
    return out.getvalue()


def write_indented(doc: LazyDict, out: TextIO) -> None:
    """Write `dumps_indented(doc)` to `out` piece by piece (a probe report is 1.7 MB: no copy of it is made)."""
    if not doc:
        out.write("{}")
        return
    out.write("{\n")
    for number, key in enumerate(dict.keys(doc)):
        deferred = doc.deferred(key)
        text = deferred.text() if deferred is not None else json.dumps(doc[key], indent=2).replace("\n", "\n  ")
        out.write(f"{',' if number else ''}\n  {json.dumps(key)}: " if number else f"  {json.dumps(key)}: ")
        out.write(text)
    out.write("\n}")
