"""YAML files read as nodes with their lines, bounded, and without constructing anything.

Manifests are read with PyYAML's composer (libyaml's C parser when present): it builds the node graph and
stops there, so no tag is ever turned into an object (`!!python/object/apply:os.system` is a tag on a node,
nothing more) and every value keeps the line it was written on. An alias is the node it names, not a copy:
composing an alias bomb is as cheap as its text. What expands it is walking it, so every walk here counts
the nodes it visits against a `Budget` (cycles included: a recursive anchor is a loop of nodes), and a file
over `MAX_BYTES` is not parsed at all. A file that does not parse, or is a Helm template, is one `Problem`
naming it and the line, and the documents before the fault are still read.

Measured on 500 Deployments (16,500 lines): libyaml's composer 0.32 s, ruamel.yaml's round-trip loader 5.6 s
(its pure-Python parser); --fix uses ruamel.yaml on the files it writes only (compat/manifests/fix.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import yaml

from compat.manifests.model import Problem, Where

MAX_BYTES = 16 * 1024 * 1024  # a manifest repository's largest files are generated CRD bundles, a few MB
MAX_DEPTH = 1000  # nesting levels (flow brackets, indentation / 2) a file may have before it is parsed
MAX_PLAIN_DEPTH = 100  # levels a value read whole may have (engine arguments are two or three deep)
MAX_NODES = 200_000  # nodes one file's walks may visit (aliases expanded): a real manifest needs a few thousand
HELM_ACTION = re.compile(r"\{\{-?\s*(\.|include|if|range|with|define|template|toYaml|tpl|end|else|\$)")
Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class BudgetExceeded(Exception):
    """A walk visited more nodes than its document may expand to (an alias bomb), or a value contains itself."""

    def __init__(self, node: yaml.Node) -> None:
        super().__init__(f"expands past {MAX_NODES} nodes, or into itself, through its aliases")
        self.node = node


@dataclass
class Budget:
    left: int = MAX_NODES

    def spend(self, node: yaml.Node) -> None:
        self.left -= 1
        if self.left < 0:
            raise BudgetExceeded(node)


@dataclass
class Doc:
    """One YAML document of a file: its root node, where it is, and the node budget its file's walks share."""

    file: str
    root: yaml.Node
    index: int
    budget: Budget = field(default_factory=Budget)  # per document
    text: str = ""  # the file's text (a block scalar's words are placed on their own lines from it)

    def where(self, node: yaml.Node | None) -> Where:
        return at(self.file, node if node is not None else self.root)


def at(file: str, node: yaml.Node) -> Where:
    return Where(file, node.start_mark.line + 1, node.start_mark.column + 1)


def read_file(path: Path, shown: str) -> tuple[list[Doc], list[Problem]]:
    """Every document of the file that parses, and a Problem for what does not (with its line)."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            return [], [Problem(Where(shown, 1), f"{size} bytes: over the {MAX_BYTES}-byte limit for one manifest, not read",
                                "split it, or check the rendered output of the part that serves (helm template ... | compat doctor --manifest -)",
                                kind="too-large")]
        data = path.read_bytes()
    except OSError as err:
        return [], [Problem(Where(shown, 1), f"cannot read it: {err.strerror or err}", None, kind="unreadable")]
    return read_text(data, shown)


def read_text(data: bytes, shown: str) -> tuple[list[Doc], list[Problem]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        return [], [Problem(Where(shown, line), f"not UTF-8 text (byte {err.start})", None, kind="parse")]
    deep = too_deep(text)
    if deep is not None:
        return [], [Problem(Where(shown, deep), f"nested more than {MAX_DEPTH} levels deep: not parsed", None, kind="parse")]
    docs: list[Doc] = []
    try:
        for index, root in enumerate(yaml.compose_all(text, Loader=Loader)):
            if root is not None and not (isinstance(root, yaml.ScalarNode) and root.value == ""):
                docs.append(Doc(shown, root, index, Budget(), text))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else 1
        return docs, [_parse_problem(text, shown, line, err)]
    except yaml.YAMLError as err:
        return docs, [Problem(Where(shown, 1), f"not YAML: {err}", None, kind="parse")]
    except RecursionError:
        return docs, [Problem(Where(shown, 1), "nested too deeply to read", None, kind="parse")]
    return docs, []


def too_deep(text: str) -> int | None:
    """The line where flow collections nest past MAX_DEPTH (libyaml's composer recurses in C per level: 100,000
    `[` end the process, not a RecursionError), or where an indentation that deep starts; None: not that deep.
    Brackets inside quotes count too: a real manifest is far from the limit either way."""
    depth = 0
    line = 1
    for char in text:
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line
        elif char in "]}":
            depth = max(0, depth - 1)
        elif char == "\n":
            line += 1
    for number, row in enumerate(text.splitlines(), 1):
        if len(row) - len(row.lstrip(" ")) > 2 * MAX_DEPTH:
            return number
    return None


def _parse_problem(text: str, shown: str, line: int, err: yaml.MarkedYAMLError) -> Problem:
    helm = next((n for n, row in enumerate(text.splitlines(), 1) if HELM_ACTION.search(row)), None)
    if helm is not None:
        return Problem(Where(shown, helm), "a Helm template: only Helm can render it (its {{ ... }} actions are not YAML)",
                       "check what it renders: helm template RELEASE CHART -f values.yaml | compat doctor --manifest -",
                       kind="template")
    what = " ".join(str(err.problem or err.context or "not YAML").split())
    return Problem(Where(shown, line), f"not YAML: {what}", None, kind="parse")


def is_template_text(doc: Doc) -> int | None:
    """The line of a Helm action in a document that parsed anyway (`{{- if }}` in a comment-free list item)."""
    for n, row in enumerate(doc.text.splitlines(), 1):
        if HELM_ACTION.search(row) and not row.lstrip().startswith("#"):
            return n
    return None


# -- walking nodes ---------------------------------------------------------------------------------
def items(doc: Doc, node: yaml.Node | None) -> Iterator[tuple[yaml.Node, yaml.Node]]:
    """(key, value) of a mapping, `<<` merge keys expanded (the mapping's own keys win), counted in the budget."""
    if not isinstance(node, yaml.MappingNode):
        return
    own = []
    merged: list[yaml.Node] = []
    for key, value in node.value:
        doc.budget.spend(value)
        if isinstance(key, yaml.ScalarNode) and key.tag == "tag:yaml.org,2002:merge":
            merged += value.value if isinstance(value, yaml.SequenceNode) else [value]
        else:
            own.append((key, value))
    seen = set()
    for key, value in own:
        seen.add(scalar(key))
        yield key, value
    for source in merged:
        for key, value in items(doc, source):
            if scalar(key) not in seen:
                seen.add(scalar(key))
                yield key, value


def get(doc: Doc, node: yaml.Node | None, *path: str | int) -> yaml.Node | None:
    """The node at `path` (mapping keys and sequence indexes), or None."""
    for step in path:
        if node is None:
            return None
        if isinstance(step, int):
            node = node.value[step] if isinstance(node, yaml.SequenceNode) and -len(node.value) <= step < len(node.value) else None
            if node is not None:
                doc.budget.spend(node)
        else:
            node = next((v for k, v in items(doc, node) if scalar(k) == step), None)
    return node


def seq(doc: Doc, node: yaml.Node | None) -> list[yaml.Node]:
    if not isinstance(node, yaml.SequenceNode):
        return []
    for child in node.value:
        doc.budget.spend(child)
    return list(node.value)


def scalar(node: yaml.Node | None) -> str | None:
    """A scalar's text as written (None: not a scalar, or YAML null)."""
    if not isinstance(node, yaml.ScalarNode) or node.tag == "tag:yaml.org,2002:null":
        return None
    return str(node.value)


def text(doc: Doc, node: yaml.Node | None, *path: str | int) -> str | None:
    return scalar(get(doc, node, *path))


def plain(doc: Doc, node: yaml.Node | None, _path: frozenset[int] = frozenset()) -> Any:
    """The node as plain Python (str, int, float, bool, None, list, dict), every node counted in the budget; a node
    that contains itself (a recursive anchor) exceeds it at once.

    Only the YAML 1.1 core scalars are resolved (the tags the composer set); any other tag is its text."""
    if node is None:
        return None
    doc.budget.spend(node)
    if isinstance(node, yaml.ScalarNode):
        return _scalar_value(node)
    if id(node) in _path or len(_path) > MAX_PLAIN_DEPTH:
        raise BudgetExceeded(node)
    inner = _path | {id(node)}
    if isinstance(node, yaml.SequenceNode):
        return [plain(doc, child, inner) for child in node.value]
    return {str(plain(doc, k, inner)): plain(doc, v, inner) for k, v in items(doc, node)}


def _scalar_value(node: yaml.ScalarNode) -> Any:
    value = str(node.value)
    if node.tag == "tag:yaml.org,2002:null":
        return None
    if node.tag == "tag:yaml.org,2002:bool":
        return value.lower() in ("yes", "true", "on", "y")
    if node.tag == "tag:yaml.org,2002:int":
        try:
            return int(value.replace("_", ""), 0) if len(value) < 40 else value
        except ValueError:
            return value
    if node.tag == "tag:yaml.org,2002:float":
        try:
            return float(value.replace("_", ""))
        except ValueError:
            return value
    return value


def line_in_scalar(doc: Doc, node: yaml.Node, offset: int) -> int:
    """The file line of character `offset` of a scalar's value: a block scalar (`|`, `>`) keeps its lines, the
    lines of a plain or quoted one are folded, so its own line is the best there is."""
    base = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">"):
        return base + 1 + str(node.value)[:offset].count("\n")
    return base
