"""A facts entry split by part, so a reader decodes only the parts it reads (doctor never decodes explain's
error_sites), each at most once per process.

The entry is one JSON document (json.loads reads it whole) whose first line is an index of the rest:

    {"format": 3, "key": "...", "compat": "0.2.0", "meta": {...}, "size": N,
     "index": [["name", offset, length, "digest"], ...], "parts": {
    "name": <value>, ...}}

The first line, everything before "parts", is compact JSON ended by a comma; numbers in it are padded with spaces to a
fixed width, so the offsets (in bytes, from the start of the file) are known before they are written. Each part's
value is written as `json.dumps(value, indent=2)` writes it one level deep (its lines indented by two more spaces):
`compat probe --json` prints a part it never decoded by copying its text (compat.core.lazy_json). The parts of up
to SMALL bytes come first and are read with the first line, in one read; a larger one is read when first asked.
Each part's digest (of its text) is in the index: a part with the same text as one decoded already in this process
(a patched overlay's facts are mostly its release's) is that value, not decoded again.

An entry cut short, edited or replaced shows: its size is not the one the first line says, the first line does not
decode, a part does not decode, or the file read for a large part is not the one indexed. A reader then treats it as
a corrupt entry (`Corrupt`), which its caller ignores and rewrites (compat/facts.py).
"""

from __future__ import annotations

import json
import os
from collections import Counter, OrderedDict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["FORMAT", "SMALL", "KEEP_IN_PROCESS", "Corrupt", "Entry", "encode", "read", "known_entry", "forget",
           "known_value", "keep_value", "forget_all", "DECODES"]

FORMAT = 3
SMALL = 64 * 1024  # a part longer than this is read from the file when first asked (error_sites: ~1 MB)
_WIDTH = 12  # digits of the padded numbers of the first line
_FIRST_READ = 256 * 1024  # what is read at once when the first line and the small parts are wanted
KEEP_IN_PROCESS = 512  # entries kept read in this process (doctor over 39 releases: ~200 with the patched overlays)
KEEP_PARTS = 8192  # parts decoded, by digest (a doctor over 39 releases decodes about 1,500 distinct ones)

# (entry path or "<memory>", part name or "" for the first line) -> times decoded, in this process: the count tests
# of doctor read it (each release's facts are decoded once per run)
DECODES: Counter[tuple[str, str]] = Counter()


class Corrupt(ValueError):
    """The entry is not what its first line says (cut short, edited, replaced meanwhile)."""


def part_text(value: Any) -> str:
    """A part as the entry holds it: `json.dumps(value, indent=2)` one level deep."""
    return json.dumps(value, indent=2).replace("\n", "\n  ")


def _digest(text: bytes) -> str:
    from compat.core.hashing import sha256

    return sha256(text).hexdigest()[:32]


def _number(n: int) -> str:
    return f"{n:{_WIDTH}d}"


def encode(key: str, compat: str, parts: dict[str, Any], meta: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """(the entry's text, {name: part text}); raises TypeError / ValueError when a value is not JSON."""
    texts = {name: part_text(value) for name, value in parts.items()}
    digests = {name: _digest(text.encode()) for name, text in texts.items()}
    ordered = sorted(texts, key=lambda name: len(texts[name]) > SMALL)  # small ones first, each group in report order
    head = json.dumps({"format": FORMAT, "key": key, "compat": compat, "meta": meta})[:-1]
    placeholder = ", ".join(f"[{json.dumps(name)}, {_number(0)}, {_number(0)}, {json.dumps(digests[name])}]"
                            for name in texts)
    first_len = len(f'{head}, "size": {_number(0)}, "index": [{placeholder}],\n'.encode())
    body, where, offset = [], {}, first_len + len('"parts": {')
    for number, name in enumerate(ordered):
        lead = f'{"," if number else ""}\n{json.dumps(name)}: '
        offset += len(lead)
        where[name] = (offset, len(texts[name]))  # ASCII: json.dumps escapes everything else
        body.append(lead + texts[name])
        offset += len(texts[name])
    tail = '"parts": {' + "".join(body) + "}}\n"
    size = first_len + len(tail.encode())
    index = ", ".join(f"[{json.dumps(name)}, {_number(where[name][0])}, {_number(where[name][1])}, {json.dumps(digests[name])}]"
                      for name in texts)
    first = f'{head}, "size": {_number(size)}, "index": [{index}],\n'
    assert len(first.encode()) == first_len
    return first + tail, texts


class Entry:
    """One entry's index, its small parts' bytes, and the parts decoded so far (shared by every reader in the process)."""

    def __init__(self, where: str, header: dict[str, Any], small: bytes, small_start: int,
                 identity: tuple[int, int, int] | None, texts: dict[str, str] | None = None) -> None:
        self.where = where  # the file, or "<memory>" for an entry that was not stored
        self.key = header.get("key")
        self.meta: dict[str, Any] = header["meta"]
        self.index = {name: (offset, length) for name, offset, length, _ in header["index"]}
        self.digests = {name: digest for name, _, _, digest in header["index"]}
        self.identity = identity
        self._small, self._small_start = small, small_start
        self._texts = texts  # an entry not stored: every part's text, in memory
        self._values: dict[str, Any] = {}

    @property
    def names(self) -> list[str]:
        return list(self.index)

    def text(self, name: str) -> bytes:
        """The part's text as the file holds it (never decoded)."""
        if self._texts is not None:
            return self._texts[name].encode()
        offset, length = self.index[name]
        start = offset - self._small_start
        if 0 <= start and start + length <= len(self._small):
            return self._small[start:start + length]
        try:
            with open(self.where, "rb") as handle:
                st = os.fstat(handle.fileno())
                if (st.st_ino, st.st_size, st.st_mtime_ns) != self.identity:
                    raise Corrupt(f"{self.where} was replaced since its index was read")
                handle.seek(offset)
                data = handle.read(length)
        except OSError as err:
            raise Corrupt(f"{self.where}: {err}") from None
        if len(data) != length:
            raise Corrupt(f"{self.where} is shorter than its index says")
        return data

    def value(self, name: str) -> Any:
        """The part, decoded once per process; Corrupt when it does not decode."""
        if name in self._values:
            return self._values[name]
        digest = self.digests.get(name)
        if digest is not None and digest in _BY_DIGEST:  # the same text decoded already (the release's, an overlay's)
            _BY_DIGEST.move_to_end(digest)
            value = self._values[name] = _BY_DIGEST[digest]
            return value
        text = self.text(name)
        DECODES[(self.where, name)] += 1
        try:
            value = json.loads(text)
        except ValueError:
            raise Corrupt(f"{self.where}: part {name} does not decode") from None
        if digest is not None and _digest(text) != digest:
            raise Corrupt(f"{self.where}: part {name} is not the text indexed")
        self._values[name] = value
        if digest is not None:
            _remember(_BY_DIGEST, digest, value, KEEP_PARTS)
        return value

    def decoded(self, name: str) -> bool:
        return name in self._values


def read(path: str, key: str | None) -> Entry | None:
    """The entry at `path` (its first line and small parts), or None: missing, another key, another format, corrupt."""
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            data = handle.read(_FIRST_READ)
            end = data.find(b"\n")
            if end == -1:
                return None
            DECODES[(path, "")] += 1
            header = json.loads(data[:end].rstrip(b",") + b"}")
            if not _well_formed(header) or header["key"] != key or int(header["size"]) != st.st_size:
                return None
            small = [offset + length for _, offset, length, _ in header["index"] if length <= SMALL]
            small_start = end + 1
            small_end = max(small, default=small_start)
            if small_end > len(data):
                data += handle.read(small_end - len(data))
    except (OSError, ValueError):
        return None
    return Entry(path, header, data[small_start:small_end], small_start, (st.st_ino, st.st_size, st.st_mtime_ns))


def in_memory(key: str, compat: str, meta: dict[str, Any], texts: dict[str, str]) -> Entry:
    """An entry that was not stored (the cache is off, the tree is racy): its parts' texts stay in memory."""
    header = {"key": key, "compat": compat, "meta": meta,
              "index": [[name, 0, len(text), None] for name, text in texts.items()]}
    return Entry("<memory>", header, b"", 0, None, texts)


def _well_formed(header: Any) -> bool:
    return (isinstance(header, dict) and header.get("format") == FORMAT and isinstance(header.get("meta"), dict)
            and isinstance(header.get("index"), list)
            and all(isinstance(item, list) and len(item) == 4 and isinstance(item[0], str)
                    and isinstance(item[1], int) and isinstance(item[2], int) and item[1] >= 0 and item[2] >= 0
                    and isinstance(item[3], str) for item in header["index"]))


# -- what this process has read ---------------------------------------------------------------------------------
# entry path -> its parts (probe reports) or (key, its value) (compat.facts.memo), each used again only while its
# file is the one it was read from (inode, size, mtime); the least recently used go first.
_ENTRIES: OrderedDict[str, Entry] = OrderedDict()
_VALUES: OrderedDict[str, tuple[tuple[int, int, int], str | None, Any]] = OrderedDict()
_BY_DIGEST: OrderedDict[str, Any] = OrderedDict()  # a part's digest -> its value, decoded once per process


def _identity(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _remember(cache: OrderedDict, where: str, value: Any, keep: int | None = None) -> None:
    cache[where] = value
    cache.move_to_end(where)
    while len(cache) > (KEEP_IN_PROCESS if keep is None else keep):
        cache.popitem(last=False)


def known_entry(path: str, key: str | None) -> Entry | None:
    """The entry at `path` split by part: read once per process while its file stays the same (`read`)."""
    identity = _identity(path)
    known = _ENTRIES.get(path)
    if identity is None:
        _ENTRIES.pop(path, None)
        return None
    if known is not None and known.key == key and known.identity == identity:
        _ENTRIES.move_to_end(path)
        return known
    entry = read(path, key)
    if entry is None:
        _ENTRIES.pop(path, None)
    else:
        _remember(_ENTRIES, path, entry)
    return entry


def forget_all() -> None:
    """Nothing read yet, as in a new process (the tests)."""
    _ENTRIES.clear()
    _VALUES.clear()
    _BY_DIGEST.clear()


def forget(path: str) -> None:
    """The entry at `path` turned out corrupt while its parts were read: read it afresh next time."""
    _ENTRIES.pop(path, None)
    _VALUES.pop(path, None)


def known_value(path: str | None, key: str | None) -> Any | None:
    """The value this process read or stored at `path` for `key`, while the file is the one it was read from."""
    known = _VALUES.get(path) if path is not None else None
    if known is None or known[1] != key or known[0] != _identity(path or ""):
        return None
    _VALUES.move_to_end(path or "")
    return known[2]


def keep_value(path: str | None, key: str | None, value: Any) -> None:
    identity = _identity(path) if path is not None and value is not None else None
    if identity is not None and path is not None:
        _remember(_VALUES, path, (identity, key, value))
