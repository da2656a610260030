"""An assert quoted by its expression, with or without its file: `[Bug]: ... assert error, assert (self.x ==`,
`AssertionError: assert num_heads % tp_size == 0`, `eagle.py: assert hidden_states.shape[-1] == ...`. The release's
`assert` statements are matched by their text, normalised (tokens compared, brackets of grouping and spacing left
out, quotes alike): the expression whole, cut short where the title ended, or followed by the assert's message.

The asserts of the speculative-decoding files (the error_sites probe's) are compared first; when none is the text,
the release's files that hold its rarest name and an `assert` are read (at most MAX_FILES). A file named in the text
(`eagle.py`, `vllm/v1/spec_decode/eagle.py:123`) keeps the asserts of that file.
"""

from __future__ import annotations

import ast
import re
import textwrap

from compat.core.tree import EngineTree, UnparseableFile
from compat.explain.sites import Site, SiteIndex

_QUOTED = re.compile(r"(?<![\w.])assert\s+(?P<expr>.+)$")
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|==|!=|<=|>=|//|\*\*|'[^']*'?|\S")
_FILE = re.compile(r"([\w./-]+\.py)(?:[:\", line]+(\d+))?")
MIN_TOKENS = 3  # tokens of a quoted expression needed to look for it
MAX_FILES = 40
MAX_FOUND = 6
MAX_LOOKUPS = 3  # lines of a text looked up (a log's repeated assert lines are one failure)
_CACHE: dict[tuple, list[tuple[Site, tuple[str, ...]]]] = {}


def quoted(text: str) -> tuple[str, ...] | None:
    """The tokens of the expression an `assert` quotes in the text (the last `assert` followed by one)."""
    for found in reversed(list(re.finditer(r"(?<![\w.])assert\s+", text))):
        tokens = tokens_of(text[found.end():])
        if len(tokens) >= MIN_TOKENS and tokens[0] not in ("error", "failed", "fail", "errors"):
            return tokens
    return None


def tokens_of(expression: str) -> tuple[str, ...]:
    text = expression.replace('"', "'").strip().rstrip("`'\".,;:")
    return tuple(t for t in _TOKEN.findall(text) if t not in ("(", ")", "`"))


def fits(asserted: tuple[str, ...], given: tuple[str, ...]) -> str | None:
    """How the quoted tokens fit an assert's: "whole", "cut" (the quote ends early), "with its message"; or None."""
    if asserted == given:
        return "whole"
    if len(given) < len(asserted) and asserted[:len(given)] == given:
        return "cut"
    if len(given) > len(asserted) and given[:len(asserted)] == asserted and given[len(asserted)] == ",":
        return "with its message"
    return None


def find(tree: EngineTree, index: SiteIndex, text: str, elsewhere=None) -> list[tuple[Site, str]]:
    """The release's asserts the text quotes, each with how it fits; the speculative-decoding files first."""
    given = quoted(text)
    if given is None:
        return []
    hint = _FILE.search(text)
    wanted = hint.group(1).rpartition("/")[2] if hint else None
    found = _matching(_asserts_of(tree, [s for s in index.sites if s.kind == "assert"]), given, wanted)
    if not found:
        files = _files_with(tree, given, wanted)
        sites = [s for relpath in files for s in _file_asserts(tree, relpath, elsewhere)]
        found = _matching(_asserts_of(tree, sites), given, wanted)
    if hint and hint.group(2):
        exact = [(s, how) for s, how in found if s.covers(s.file, int(hint.group(2)))]
        found = exact or found
    return found[:MAX_FOUND]


def _matching(asserts: list[tuple[Site, tuple[str, ...]]], given: tuple[str, ...], wanted: str | None
              ) -> list[tuple[Site, str]]:
    out = []
    for site, tokens in asserts:
        how = fits(tokens, given) or fits(_without_self(tokens), _without_self(given))
        if how is not None and (wanted is None or site.file.endswith(wanted)):
            out.append((site, how))
    order = {"whole": 0, "with its message": 1, "cut": 2}
    return sorted(out, key=lambda pair: (order[pair[1]], pair[0].location))


def _without_self(tokens: tuple[str, ...]) -> tuple[str, ...]:
    out, skip = [], False
    for i, token in enumerate(tokens):
        if skip:
            skip = False
            continue
        if token == "self" and i + 1 < len(tokens) and tokens[i + 1] == ".":
            skip = True
            continue
        out.append(token)
    return tuple(out)


def _asserts_of(tree: EngineTree, sites: list[Site]) -> list[tuple[Site, tuple[str, ...]]]:
    """Each assert site with the tokens of its test, read from its lines in the release."""
    out = []
    for site in sites:
        key = (str(tree.root), tree.version, site.location)
        cached = _CACHE.get(key)
        if cached is None:
            cached = _CACHE[key] = [(site, tokens_of(test))] if (test := _test(tree, site)) else []
        out.extend(cached)
    return out


def _test(tree: EngineTree, site: Site) -> str | None:
    try:
        lines = tree.text(site.file).split("\n")
    except OSError:
        return None
    statement = textwrap.dedent("\n".join(lines[site.line - 1:(site.end_line or site.line)]))
    try:
        node = ast.parse(statement).body[0]
    except (SyntaxError, IndexError):
        return None
    return ast.unparse(node.test) if isinstance(node, ast.Assert) else None


def _files_with(tree: EngineTree, given: tuple[str, ...], wanted: str | None) -> list[str]:
    names = sorted((t for t in given if re.fullmatch(r"[A-Za-z_]\w{3,}", t) and t != "self"), key=len, reverse=True)
    if not names:
        return []
    needle = names[0].encode()
    files = [f for f in tree.files(tree.engine) if f.endswith(".py") and (wanted is None or f.endswith(wanted))]
    return [f for f in files if needle in (data := tree.read_bytes(f)) and b"assert" in data][:MAX_FILES]


def _file_asserts(tree: EngineTree, relpath: str, elsewhere=None) -> list[Site]:
    if elsewhere is not None:
        return [s for s in elsewhere.index([relpath]).sites if s.kind == "assert"]
    try:
        module = tree.parse(relpath)
    except UnparseableFile:
        return []
    return [Site("assert", "AssertionError", None, "", None, None, f"{relpath}:{node.lineno}", node.end_lineno)
            for node in ast.walk(module) if isinstance(node, ast.Assert)]


# -- the evidence's lines ----------------------------------------------------------------------------------------
def read(evidence, tree: EngineTree, index: SiteIndex, elsewhere=None) -> None:
    """Lines of a paste (or a log's error lines) that quote an assert and matched nothing become its events."""
    from compat.explain.analysis import SHORT_INPUT, Event, record_event

    short = evidence.lines <= SHORT_INPUT
    seen = {("site", e.site.location) if e.site is not None else ("text", e.text): e for e in evidence.events}
    looked = 0
    for pair in list(evidence.unmatched):
        line, error_like = pair
        if not (short or error_like) or "assert" not in line.text or looked >= MAX_LOOKUPS:
            continue
        looked += 1
        found = find(tree, index, line.text, elsewhere)
        if not found:
            continue
        evidence.unmatched.remove(pair)
        (site, how), others = found[0], found[1:]
        one = len({s.location for s, _ in found}) == 1
        record_event(evidence, seen, Event(line.number, line.text.strip(), "AssertionError", site if one else None,
                                           f"assert text ({how})", process=line.process,
                                           candidates=[] if one else [s for s, _ in found]))
    evidence.events.sort(key=lambda e: e.line)
