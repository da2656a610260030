"""A traceback flattened onto one line, as an issue title, a chat message or a tracker that folds newlines writes it:
`... Traceback (most recent call last): File "a.py", line 3, in f x = g() File "b.py", line 9, in g raise ValueError(
"...") ValueError: ...`, the process prefix repeated in the middle of it when each line of the log had one
(`(EngineCore_DP0 pid=7) ERROR 09-18 12:03:12 [core.py:712] `). The line is given back as the lines it was: the
prefix's shape (its digits any digits) splits it where each line began, then each piece is cut before the traceback's
header, before each frame, between a frame and its code line, and before the exception that ends it. The carets
Python draws under a frame's code (`^^^^`) are dropped. A line that is a traceback's one frame and nothing else is
left as it is (that is no flattening), so a log pays one substring search per line.

    unflatten(line) -> [line, ...]
"""

from __future__ import annotations

import re

from compat.explain.logline import read
from compat.explain.text import Line

START = "Traceback (most recent call last):"
_CHAINS = ("During handling of the above exception, another exception occurred:",
           "The above exception was the direct cause of the following exception:")
_FRAME = re.compile(r'File "[^"]+", line \d+, in (?:<[^>]*>|[\w.]+)')
_CARETS = re.compile(r"(?<!\S)[\^~]{2,}(?!\S)")
# the exception that ends a traceback: a class name (dotted, perhaps) followed by `: ` or the end, not `(` (a raise)
_EXCEPTION = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Warning))"
                        r"(?=:\s|:$|\s*$)")
_CUTS = re.compile("|".join([re.escape(START), *map(re.escape, _CHAINS), _FRAME.pattern]))
MAX_PIECES = 400  # lines one flattened line gives back at most (a recursion's frames say nothing more)


def unflatten(line: Line) -> list[Line]:
    """The lines a flattened traceback was (each numbered as the line it came on), or [line]."""
    text = line.text
    if 'File "' not in text or text[:1] == "{":  # no frame; a JSON record has its own lines (structured.py)
        return [line]
    frames = list(_FRAME.finditer(text))
    if not frames or (len(frames) == 1 and START not in text and not text[frames[0].end():].strip()):
        return [line]
    body = read(line).text
    head = text[:len(text) - len(body)] if text.endswith(body) else ""  # the prefixes the line starts with
    segments = _by_prefix(text, head) if head.strip() else [(head, text[len(head):])]
    out: list[Line] = []
    for prefix, body in segments:
        for piece in _pieces(body):
            out.append(Line(line.number, prefix + piece))
            if len(out) >= MAX_PIECES:
                return out
    return out or [line]


def _by_prefix(text: str, head: str) -> list[tuple[str, str]]:
    """(prefix, body) of each line the text was, split where the head's shape repeats (a time's digits may differ)."""
    shape = re.compile("".join(r"\d+" if part.isdigit() else r"\s+" if part.isspace() else re.escape(part)
                               for part in re.split(r"(\d+|\s+)", head.strip()) if part) + r"\s?")
    starts = [m for m in shape.finditer(text, len(head)) if m.start() > 0 and text[m.start() - 1].isspace()]
    bounds = [(0, len(head))] + [(m.start(), m.end()) for m in starts]
    out = []
    for i, (start, body_start) in enumerate(bounds):
        end = bounds[i + 1][0] if i + 1 < len(bounds) else len(text)
        out.append((text[start:body_start], text[body_start:end].rstrip()))
    return out


def _pieces(body: str) -> list[str]:
    """A body's lines: the text before a traceback's header (with it), the chain notes, each frame (indented as
    Python writes it), the code shown under it, and the exception line after the last frame."""
    cuts = list(_CUTS.finditer(body))
    if not cuts:
        return [body] if _CARETS.sub("", body).strip() else []  # a line of carets alone says nothing
    out: list[str] = []
    lead = body[:cuts[0].start()].strip()
    for i, cut in enumerate(cuts):
        after = body[cut.end():cuts[i + 1].start() if i + 1 < len(cuts) else len(body)]
        token = cut.group(0)
        if token == START:
            out.append(f"{lead} {START}".strip() if i == 0 else START)
            out.extend(_rest(after, frame=False))
        elif token in _CHAINS:
            out.append(token)
            out.extend(_rest(after, frame=False))
        else:
            if i == 0 and lead:
                out.append(lead)
            out.append("  " + token)
            out.extend(_rest(after, frame=True))
    return out


def _rest(text: str, frame: bool) -> list[str]:
    """What follows a frame (its code, then perhaps the exception) or a header (perhaps an exception)."""
    text = _CARETS.sub(" ", text).strip()
    if not text:
        return []
    found = _EXCEPTION.search(text)
    if found is None:
        return ["    " + text] if frame else [text]
    code, exception = text[:found.start()].strip(), text[found.start():].strip()
    return ([("    " + code) if frame else code] if code else []) + [exception]
