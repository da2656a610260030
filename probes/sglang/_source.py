"""Parse a piece of a big file instead of the whole file.

SGLang's model files run to thousands of lines and a release has hundreds of them;
parsing every file that mentions a method would take most of a second. A byte search
finds the method, its block is cut out by indentation and parsed alone, with line
numbers shifted back to the file's. When the piece does not parse on its own, the whole
file is parsed instead (which raises UnparseableFile when this Python cannot read it).
"""

from __future__ import annotations

import ast
import re

from compat.core.tree import EngineTree


def line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def line_start(data: bytes, offset: int) -> int:
    return data.rfind(b"\n", 0, offset) + 1


def _indent(line: bytes) -> int:
    return len(line) - len(line.lstrip(b" \t"))


def block_end(data: bytes, start: int) -> int:
    """End offset of the indented block whose header line starts at `start` (a def or class line)."""
    first_nl = data.find(b"\n", start)
    if first_nl < 0:
        return len(data)
    indent = _indent(data[start:first_nl])
    pos = first_nl + 1
    seen_body = False
    # brackets still open from the header line (multi-line signatures)
    depth = data[start:first_nl].count(b"(") - data[start:first_nl].count(b")")
    while pos < len(data):
        nl = data.find(b"\n", pos)
        nl = len(data) if nl < 0 else nl
        line = data[pos:nl]
        stripped = line.strip()
        if depth > 0:
            depth += line.count(b"(") - line.count(b")")
        elif stripped and not stripped.startswith(b"#"):
            if (_indent(line) <= indent and seen_body and not stripped.startswith((b")", b"]", b"}"))
                    and not _inside_string(data, start, pos)):
                return pos
            seen_body = True
        pos = nl + 1
    return len(data)


def parse_piece(data: bytes, start: int, end: int, line: int) -> ast.stmt | None:
    """The first statement of `data[start:end]` (which begins at file line `line`), or None.

    An indented piece goes under `if 1:` rather than through dedent, which gives up on a
    string continuing at column 0; an `elif` block parses as the `if` it is.
    """
    text = data[start:end].decode("utf-8", errors="replace")
    indented = text[:1] in (" ", "\t")
    stripped = text.lstrip(" \t")
    if stripped.startswith("elif"):
        text = text[: len(text) - len(stripped)] + stripped[2:]
    try:
        module = ast.parse("if 1:\n" + text if indented else text)
    except SyntaxError:
        return None
    body = module.body[0].body if indented and module.body and isinstance(module.body[0], ast.If) else module.body  # `if 1:`
    if not body:
        return None
    node = body[0]
    ast.increment_lineno(node, line - 2 if indented else line - 1)
    return node


def parse_block(tree: EngineTree, relpath: str, start: int) -> ast.stmt | None:
    """The statement (def/class/if) whose header line starts at byte `start`, with the file's line numbers."""
    data = tree.read_bytes(relpath)
    first_line = line_of(data, start)
    node = parse_piece(data, start, block_end(data, start), first_line)
    if node is not None:
        return node
    for found in ast.walk(tree.parse(relpath)):  # raises UnparseableFile when the file itself is bad
        if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If)) and found.lineno == first_line:
            return found
    return None


def enclosing_def_start(data: bytes, offset: int) -> int | None:
    """Start of the line of the innermost `def` that contains byte `offset`."""
    pos = line_start(data, offset)
    target_indent = _indent(data[pos:data.find(b"\n", pos) if data.find(b"\n", pos) >= 0 else len(data)])
    while pos > 0:
        prev = line_start(data, pos - 1)
        line = data[prev:pos - 1]
        stripped = line.lstrip(b" \t")
        if stripped and _indent(line) < target_indent:
            if stripped.startswith((b"def ", b"async def ")):
                return prev
            if stripped.startswith(b"class ") or _indent(line) == 0 and not stripped.startswith((b"#", b")", b"@")):
                return None
            if not stripped.startswith((b"#", b")", b"]", b"}")):
                target_indent = _indent(line)
        pos = prev
    return None


_TOP_LEVEL_LINE = re.compile(rb"\n[^\s#)\]}]")  # a line starting at column 0 (not a comment or closing bracket)


def _inside_string(data: bytes, start: int, end: int) -> bool:
    """Whether `end` falls inside a triple-quoted string opened after `start` (odd count of quotes)."""
    return data.count(b'"""', start, end) % 2 == 1 or data.count(b"'''", start, end) % 2 == 1


def top_level_end(data: bytes, start: int, limit: int | None = None) -> int:
    """Where the top-level statement (class, def) starting at `start` ends: the next line at column 0.

    A regex in C rather than a walk line by line (classes run to 1000s of lines); a column-0
    line inside a triple-quoted string (help text, docstring) does not count.
    """
    limit = len(data) if limit is None else limit
    pos = start
    while True:
        m = _TOP_LEVEL_LINE.search(data, pos, limit)
        if m is None:
            return limit
        if not _inside_string(data, start, m.start()):
            return m.start() + 1
        pos = m.start() + 1


def enclosing_class(data: bytes, offset: int) -> tuple[str, int] | None:
    """(name, start) of the top-level class a byte offset lies in, if any."""
    pos = data.rfind(b"\nclass ", 0, offset)
    start = pos + 1 if pos >= 0 else (0 if data.startswith(b"class ") else -1)
    if start < 0:
        return None
    here = line_start(data, offset)
    if here <= start or top_level_end(data, start, here) < here:
        return None
    m = re.match(rb"class\s+(\w+)", data[start:start + 200])
    return (m.group(1).decode(), start) if m else None


def enclosing_if_start(data: bytes, offset: int) -> int | None:
    """Start of the `if`/`elif` line directly governing the statement at `offset`, if that is what it is."""
    pos = line_start(data, offset)
    nl = data.find(b"\n", pos)
    indent = _indent(data[pos:nl if nl >= 0 else len(data)])
    while pos > 0:
        prev = line_start(data, pos - 1)
        line = data[prev:pos - 1]
        stripped = line.lstrip(b" \t")
        if stripped and not stripped.startswith(b"#") and _indent(line) < indent:
            if stripped.startswith((b")", b"]", b"}")):  # end of a multi-line condition: keep going up
                pos = prev
                continue
            return prev if stripped.startswith((b"if ", b"if(", b"elif ", b"elif(")) else None
        pos = prev
    return None
