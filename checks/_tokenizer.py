"""A model directory's tokenizer, summarised for comparison: vocabulary size, the bos/eos/pad ids, the added
special tokens, whether it has a chat template. Read by the tokenizer check from the drafter's and the
target's directories, with the standard library only (no `tokenizers` import: a plain install runs it).

The files are someone else's and may be huge or hostile. Each is opened through compat.core.files (no link out
of the directory, regular files only, no waiting on a FIFO) and read up to a cap. tokenizer.json (10+ MB
for a 150k vocabulary) is never parsed whole: its `added_tokens` array is cut out by bracket matching and
parsed alone, and `model.vocab` is walked entry by entry with a regex, keeping only the count, the largest
id and the ids of the few special tokens asked for. What cannot be read is said (`problems`), never guessed.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from compat.core.errors import CompatError
from compat.core.files import input_roots, open_regular, read_json

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
                   "tiktoken.model", "vocab.json", "merges.txt")
SMALL_JSON_BYTES = 16 * 1024 * 1024  # tokenizer_config.json with a long chat template is ~100 kB
TOKENIZER_JSON_BYTES = 256 * 1024 * 1024  # read in full only up to this; the largest real ones are ~30 MB
ROLES = ("bos", "eos", "pad")
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'  # a JSON string, the unrolled loop (no per-character alternation)
_DICT_ENTRY = re.compile(rb"\s*(" + _STRING + rb")\s*:\s*(-?\d+)\s*([,}])")
_LIST_ENTRY = re.compile(rb"\s*\[\s*(" + _STRING + rb")\s*,[^\]]*\]\s*([,\]])")
_TOKEN = re.compile(_STRING + rb"|[\[\]{}]")


@dataclass
class Tokenizer:
    """What a directory says about its tokenizer (None: not said, or not readable: see problems)."""

    files: list[str] = field(default_factory=list)  # tokenizer files present
    vocab_size: int | None = None  # the largest id + 1, over the base vocabulary and the added tokens
    special_ids: dict[str, list[int]] = field(default_factory=dict)  # "bos"/"eos"/"pad" -> ids
    special_tokens: dict[str, int] = field(default_factory=dict)  # added special token content -> id
    chat_template: bool = False
    digests: dict[str, str] = field(default_factory=dict)  # file name -> sha256 of tokenizer.json / *.model
    problems: list[str] = field(default_factory=list)

    @property
    def ships_tokenizer(self) -> bool:
        return bool(self.files)


def read_tokenizer(directory: Path) -> Tokenizer:
    """The tokenizer of a model directory (kept per directory and its files' sizes and times)."""
    directory = Path(directory)
    if not directory.is_dir():
        return Tokenizer()
    names = ("config.json", "generation_config.json", "chat_template.jinja", "chat_template.json", *TOKENIZER_FILES)
    stamp = tuple((n, s.st_size, s.st_mtime_ns) for n in names if (s := _stat(directory / n)) is not None)
    return _read(directory, stamp)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except OSError:
        return None


@lru_cache(maxsize=16)
def _read(directory: Path, stamp: tuple[tuple[str, int, int], ...]) -> Tokenizer:
    present = {name for name, _, _ in stamp}
    out = Tokenizer(files=[n for n in TOKENIZER_FILES if n in present])
    roots = input_roots(directory)
    config = _json(directory, "tokenizer_config.json", roots, out) if "tokenizer_config.json" in present else {}
    specials_map = _json(directory, "special_tokens_map.json", roots, out) if "special_tokens_map.json" in present else {}
    wanted = {role: _content(config.get(f"{role}_token", specials_map.get(f"{role}_token"))) for role in ROLES}
    token_ids: dict[str, int] = {}
    if "tokenizer.json" in present:
        token_ids = _tokenizer_json(directory / "tokenizer.json", roots, out, {w for w in wanted.values() if w})
    decoder = config.get("added_tokens_decoder")
    for key, value in decoder.items() if isinstance(decoder, dict) else ():
        if isinstance(value, dict) and isinstance(value.get("content"), str) and str(key).isdigit():
            token_ids.setdefault(value["content"], int(key))
            if value.get("special"):
                out.special_tokens.setdefault(value["content"], int(key))
    for name in ("tokenizer.model", "tiktoken.model"):
        if name in present:
            _digest(directory / name, roots, out)
    generation = _json(directory, "generation_config.json", roots, out) if "generation_config.json" in present else {}
    model_config = _json(directory, "config.json", roots, out) if "config.json" in present else {}
    for role in ROLES:
        ids = _ids(generation.get(f"{role}_token_id")) or _ids(model_config.get(f"{role}_token_id"))
        by_token = token_ids.get(wanted[role] or "")
        out.special_ids[role] = ids or ([by_token] if by_token is not None else [])
    if out.vocab_size is not None and token_ids:
        out.vocab_size = max(out.vocab_size, max(token_ids.values()) + 1)
    out.chat_template = bool(config.get("chat_template")) or "chat_template.jinja" in present or "chat_template.json" in present
    return out


def _json(directory: Path, name: str, roots: tuple[Path, ...], out: Tokenizer) -> dict[str, Any]:
    try:
        value = read_json(directory / name, roots, name, limit=SMALL_JSON_BYTES)
    except FileNotFoundError:
        return {}
    except CompatError as err:
        out.problems.append(err.message)
        return {}
    if not isinstance(value, dict):
        out.problems.append(f"{directory / name}: not a JSON object")
        return {}
    return value


def _content(value: object) -> str | None:
    """A special token as tokenizer_config.json writes it: "<s>" or {"content": "<s>", ...}."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _ids(value: object) -> list[int]:
    values = value if isinstance(value, list) else [value]
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


def _read_capped(path: Path, roots: tuple[Path, ...], out: Tokenizer, limit: int) -> bytes | None:
    """The file's bytes (its sha256 noted), or None with the reason in out.problems."""
    import hashlib

    try:
        fd, _, info = open_regular(path, roots, f"reading {path.name}")
    except FileNotFoundError:
        return None
    except CompatError as err:
        out.problems.append(err.message)
        return None
    try:
        if info.st_size > limit:
            out.problems.append(f"{path}: {info.st_size} bytes, more than the {limit}-byte limit: not compared")
            return None
        digest, chunks, total = hashlib.sha256(), [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > limit:
                out.problems.append(f"{path}: grew past the {limit}-byte limit while read: not compared")
                return None
            digest.update(chunk)
            chunks.append(chunk)
    except OSError as exc:
        out.problems.append(f"{path}: {exc.strerror or exc} while reading it")
        return None
    finally:
        os.close(fd)
    out.digests[path.name] = digest.hexdigest()
    return b"".join(chunks)


def _digest(path: Path, roots: tuple[Path, ...], out: Tokenizer) -> None:
    _read_capped(path, roots, out, TOKENIZER_JSON_BYTES)


def _tokenizer_json(path: Path, roots: tuple[Path, ...], out: Tokenizer, wanted: set[str]) -> dict[str, int]:
    """token content -> id for the added tokens and the `wanted` base tokens; sets out.vocab_size and the
    added special tokens."""
    data = _read_capped(path, roots, out, TOKENIZER_JSON_BYTES)
    if data is None:
        return {}
    found: dict[str, int] = {}
    added = _value_after(data, b'"added_tokens"', b"[")
    if added is not None:
        try:
            tokens = json.loads(added.decode("utf-8"))
        except (ValueError, RecursionError):
            tokens = None
        for token in tokens if isinstance(tokens, list) else []:
            if isinstance(token, dict) and isinstance(token.get("content"), str) and _ids(token.get("id")):
                found[token["content"]] = token["id"]
                if token.get("special"):
                    out.special_tokens[token["content"]] = token["id"]
    count = _vocab(data, wanted, found)
    if count is None:
        out.problems.append(f"{path}: no model.vocab this reader understands: vocabulary size not known")
    else:
        out.vocab_size = max([count, *(i + 1 for i in found.values())])
    return found


def _value_after(data: bytes, key: bytes, opener: bytes) -> bytes | None:
    """The JSON array/object that follows the first `key:` in data, cut out by bracket matching."""
    at = data.find(key)
    start = data.find(opener, at + len(key)) if at >= 0 else -1
    if start < 0 or data[at + len(key):start].strip(b" \t\r\n:") != b"":
        return None
    depth = 0
    for match in _TOKEN.finditer(data, start):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
        elif token in (b"]", b"}"):
            depth -= 1
            if depth == 0:
                return data[start:match.end()]
    return None


def _vocab(data: bytes, wanted: set[str], found: dict[str, int]) -> int | None:
    """The base vocabulary's size (largest id + 1 for a dict, the length for a Unigram list), walking
    `"vocab": ...` entry by entry; the ids of the `wanted` tokens go into `found`."""
    at = data.find(b'"vocab"')
    if at < 0:
        return None
    start = at + len(b'"vocab"')
    while start < len(data) and data[start:start + 1] in b" \t\r\n:":
        start += 1
    opener = data[start:start + 1]
    if opener not in (b"{", b"["):
        return None
    keys = {json.dumps(w).encode(): w for w in wanted} | {json.dumps(w, ensure_ascii=False).encode(): w for w in wanted}
    pattern, pos, largest, count = (_DICT_ENTRY if opener == b"{" else _LIST_ENTRY), start + 1, -1, 0
    if re.match(rb"\s*[}\]]", data[pos:pos + 64]):
        return 0
    while True:
        match = pattern.match(data, pos)
        if match is None:
            return None
        if opener == b"{":
            ident = int(match.group(2))
            largest = max(largest, ident)
        else:
            ident = count
        if match.group(1) in keys:
            found.setdefault(keys[match.group(1)], ident)
        count += 1
        pos = match.end()
        if match.group(match.lastindex or 0) in (b"}", b"]"):
            return largest + 1 if opener == b"{" else count
