"""JSON text -> Python values, read the way serde_json reads it and with bounded work and memory.

Python's json module is more permissive than serde_json (which the safetensors library, and so vLLM and
SGLang, parse headers with) and is unbounded on hostile text. Here it is wrapped so that:

- a number serde_json would refuse comes back as an Unreadable (the caller refuses it where it
  finds it, so the message names the key): NaN, Infinity, -Infinity, and numbers beyond a float
  ("number out of range"). A literal over MAX_NUMBER_CHARS characters is never converted (int() of
  a 4,300-digit literal raises, and its cost grows with the square of the length);
- serde_json reads integers outside 64 bits, and -0, as floats: so they come back as floats here (a
  shape holding one is refused for its type, as serde_json refuses it);
- nesting deeper than Python's recursion limit becomes a refusal instead of a RecursionError;
  `check_value` applies serde_json's exact limit (MAX_DEPTH, 127 levels) to a value and finds the
  Unreadables in it, for the callers' values whose types do not already refuse them;
- a string holding a lone surrogate escape ("\\ud800": not Unicode text, not encodable as UTF-8) is
  refused wherever it is, key or value (serde_json refuses them everywhere);
- the values are counted on the text before it is parsed (commas, brackets and braces, those in
  strings included: an upper bound, counted at C speed without a copy), so the parsed objects stay
  within memory whatever the text claims (parsing builds up to ~100 bytes of objects per value).

Objects come back as JsonObject (a dict) remembering which keys appeared more than once, so the
caller decides where duplicates matter.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter

MAX_DEPTH = 127  # serde_json's recursion limit, measured on safetensors 0.8: 127 nested levels read, 128 refused
MAX_NUMBER_CHARS = 1000
U64_MAX = (1 << 64) - 1
I64_MIN = -(1 << 63)

# A \u escape in the surrogate range: only text holding one can decode to a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# Only text with a run of 20+ digits (maybe an integer beyond 64 bits) or a -0 (a float to serde_json)
# needs _int; the test runs at C speed (a regex for the digit run backtracks on every 19-digit run).
_DIGITS_TO_ZERO = str.maketrans("123456789", "000000000")
_NEGATIVE_ZERO = re.compile(r"-0(?![0-9.eE])")


class JsonLimitError(ValueError):
    """The text is not JSON serde_json would read, or exceeds a bound; `path` locates the value."""

    def __init__(self, reason: str, path: tuple = (), stricter: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.path = path
        self.stricter = stricter  # set when serde_json would have read it: the bound is ours


class JsonObject(dict):
    """A JSON object; `duplicates` names the keys it held more than once (the last value is kept)."""

    duplicates: tuple[str, ...] = ()


class Unreadable:
    """A number serde_json refuses (`stricter` is None) or that compat refuses to convert (too long)."""

    __slots__ = ("reason", "stricter")

    def __init__(self, reason: str, stricter: str | None = None):
        self.reason = reason
        self.stricter = stricter

    def __repr__(self) -> str:
        return f"<{self.reason}>"


def _object(pairs: list[tuple[str, object]]) -> JsonObject:
    obj = JsonObject(pairs)
    if len(obj) != len(pairs):
        obj.duplicates = tuple(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
    return obj


def _float(literal: str) -> float | Unreadable:
    if len(literal) > MAX_NUMBER_CHARS:
        return Unreadable(f"a number literal of {len(literal):,} characters, over compat's {MAX_NUMBER_CHARS}",
                          stricter="number-length")
    value = float(literal)
    if math.isinf(value):
        return Unreadable(f"{literal[:24]}{'...' if len(literal) > 24 else ''}, a number out of range")
    return value


def _int(literal: str) -> int | float | Unreadable:
    if len(literal) > MAX_NUMBER_CHARS:  # far beyond a float: serde_json refuses it too
        return Unreadable(f"an integer of {len(literal):,} digits, out of range")
    if literal == "-0":
        return -0.0  # serde_json reads -0 as the float -0.0
    value = int(literal)
    if I64_MIN <= value <= U64_MAX:
        return value
    return _float(literal)  # serde_json reads integers beyond 64 bits as floats


def _constant(name: str) -> Unreadable:
    return Unreadable(f"{name}, which is not JSON")


def _needs_int_hook(text: str) -> bool:
    return _NEGATIVE_ZERO.search(text) is not None or "0" * 20 in text.translate(_DIGITS_TO_ZERO)


def count_values(text: str) -> int:
    """An upper bound on the values in `text`: one per comma, bracket and brace, plus one."""
    return 1 + text.count(",") + text.count("[") + text.count("{")


def loads(text: str, max_values: int) -> object:
    """Parse `text` as serde_json would, or raise JsonLimitError (json.JSONDecodeError for bad syntax).

    The result may hold Unreadable values: check_value finds them, with where they are."""
    values = count_values(text)
    if values > max_values:
        raise JsonLimitError(f"{values:,} JSON values, commas, brackets or braces (more than {max_values:,})",
                             stricter="value-count")
    # int literals go through _int only when one may be long, beyond 64 bits or -0: the C parser is 5x faster
    parse_int = _int if _needs_int_hook(text) else None
    try:
        value = json.loads(text, object_pairs_hook=_object, parse_int=parse_int, parse_float=_float,
                           parse_constant=_constant)
    except RecursionError:
        raise JsonLimitError(f"nested more than {MAX_DEPTH} levels deep") from None
    if _SURROGATE_ESCAPE.search(text):
        _walk(value, MAX_DEPTH, check_strings=True)
    return value


def check_value(value: object, levels: int) -> None:
    """Refuse `value` if it nests more than `levels` containers deep (a scalar is 0, [] is 1) or holds
    an Unreadable number."""
    _walk(value, levels, check_strings=False)


def _walk(root: object, levels: int, check_strings: bool) -> None:
    """Depth, Unreadables and lone surrogates, depth first with a stack of iterators: memory grows
    with the depth (at most `levels` frames), not with the number of values, and there is no recursion."""
    if type(root) is Unreadable:
        raise JsonLimitError(root.reason, stricter=root.stricter)
    if type(root) not in _CONTAINERS:
        return
    if levels < 1:
        raise JsonLimitError(f"nested more than {MAX_DEPTH} levels deep")
    frames = [_items(root)]  # one iterator per open container; the current key of each is kept in `keys`
    keys: list = []
    while frames:
        for key, item in frames[-1]:
            kind = type(item)
            if check_strings and type(key) is str and _lone_surrogate(key):
                raise JsonLimitError(f"the key {key[:40]!r} holds a lone surrogate, which is not text", tuple(keys))
            if kind in _CONTAINERS:
                if len(frames) >= levels:
                    raise JsonLimitError(f"nested more than {MAX_DEPTH} levels deep", (*keys, key))
                frames.append(_items(item))
                keys.append(key)
                break
            if kind is Unreadable:
                raise JsonLimitError(item.reason, (*keys, key), stricter=item.stricter)
            if check_strings and kind is str and _lone_surrogate(item):
                raise JsonLimitError(f"the string {item[:40]!r} holds a lone surrogate, which is not text", (*keys, key))
        else:  # this container is done
            frames.pop()
            if keys:
                keys.pop()


def _items(container):
    return iter(container.items()) if type(container) is JsonObject else enumerate(container)


_CONTAINERS = (JsonObject, list)


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
