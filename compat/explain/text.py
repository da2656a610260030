"""The user's text, line by line: a pasted message, a log file or stdin, read in bounded memory.

A log is streamed (never read whole); a line longer than MAX_LINE is cut (a progress bar or a dumped tensor
says nothing past its start); ANSI colour codes and carriage-return redraws are removed; a file that is
binary (a NUL byte in its first block, or mostly undecodable) is refused with one clear error naming it.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import re
import typing
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from compat.core.errors import UsageError

MAX_LINE = 8192  # characters kept of one line
MAX_RECORD_LINE = 1 << 18  # of a line that is a JSON record: it holds a whole traceback (structured.py)
SNIFF = 8192  # bytes looked at to tell a binary file
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


@dataclass(frozen=True)
class Line:
    number: int  # 1-based, in the input
    text: str


def clean(text: str) -> str:
    """One line as people read it: colours gone, only the last redraw of a `\\r`-redrawn line, cut at MAX_LINE (a
    JSON record's line at MAX_RECORD_LINE: its fields are lines of their own)."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.rstrip("\r").rpartition("\r")[2]
    return text[:_cap(text)]


def _cap(text: str) -> int:
    return MAX_RECORD_LINE if text[:1] == "{" else MAX_LINE


def from_text(text: str) -> Iterator[Line]:
    for number, line in enumerate(text.splitlines(), 1):
        yield Line(number, clean(line))


def from_stream(stream: typing.BinaryIO | io.BufferedIOBase | io.RawIOBase, name: str) -> Iterator[Line]:
    """Lines of a binary stream (a file, stdin), decoded as UTF-8 (undecodable bytes replaced)."""
    head = stream.read(SNIFF) or b""
    if _binary(head):
        raise UsageError(f"{name} is not text (binary bytes in its first {len(head)} bytes): explain reads "
                         "error messages and logs", hint="give the log file the engine wrote, or paste the error text")
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return _lines(_chunks(head, stream), decoder)


def _chunks(head: bytes, stream) -> Iterator[bytes]:
    yield head
    while True:
        chunk = stream.read(1 << 16)
        if not chunk:
            return
        if not chunk.strip(b"\x00"):  # a block of NULs: a sparse file's hole or a crash's zero fill, no text in it
            _skip_hole(stream)
            continue
        yield chunk


def _skip_hole(stream) -> None:
    """Past a file's hole to its next data (SEEK_DATA), or to its end: a sparse file of gigabytes is read in the
    time its data takes (found by the hostile campaign: 1 GB of hole took 3 s to decode). A pipe has no holes."""
    try:
        position = stream.tell()
        try:
            stream.seek(os.lseek(stream.fileno(), position, os.SEEK_DATA))
        except OSError as err:
            if err.errno == errno.ENXIO:  # no data after it: the hole runs to the end
                stream.seek(0, io.SEEK_END)
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        pass  # not a seekable file (stdin, a FIFO): read on


def _lines(chunks: Iterable[bytes], decoder) -> Iterator[Line]:
    number, pending_len = 0, 0
    pending: list[str] = []
    for chunk in chunks:
        text = decoder.decode(chunk)
        start = 0
        while True:
            end = text.find("\n", start)
            cap = _cap(("".join(pending) if pending else "")[:1] or text[start:start + 1])
            if end < 0:
                piece = text[start:]
                if pending_len < cap + 1:  # beyond the cap a huge line's rest is dropped, not kept
                    pending.append(piece[: cap + 1 - pending_len])
                    pending_len += len(pending[-1])
                break
            piece = text[start:end]
            number += 1
            yield Line(number, clean("".join(pending) + piece[: max(0, cap + 1 - pending_len)]))
            pending, pending_len = [], 0
            start = end + 1
    tail = "".join(pending) + decoder.decode(b"", final=True)
    if tail:
        yield Line(number + 1, clean(tail))


def _binary(head: bytes) -> bool:
    if b"\x00" in head:
        return True
    if not head:
        return False
    text = head.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\n\r\t\x1b\x0c\x08")
    return (bad + controls) > len(text) * 0.1
