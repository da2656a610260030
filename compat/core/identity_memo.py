"""A value made once from an object and kept while the object is held here: keyed by the object itself.

A cache keyed by `id(obj)` alone hands a collected object's value to the next object that gets its id (explain read
one release's option names for another's). This one holds each key and compares with `is`; the last `keep` are kept.
"""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    def __init__(self, keep: int) -> None:
        self._held: list[tuple[K, V]] = []
        self._keep = keep

    def get(self, key: K, make: Callable[[K], V]) -> V:
        """make(key) the first time `key` (this very object) is asked for while held; its value after that."""
        for held, value in self._held:
            if held is key:
                return value
        value = make(key)
        self._held.insert(0, (key, value))
        del self._held[self._keep:]
        return value
