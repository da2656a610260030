"""Which hidden states a target model's aux capture can reach: every layer's input only, or the last
layer's output too (capture-before id n, n = num_hidden_layers), read from its forward loop.

Both engines store, for id k, the residual stream entering layer k. How a forward takes it decides
whether id n exists at all:
- `if idx in self.aux_hidden_state_layers: aux.append(...)` before running layer idx (vLLM <= 0.17
  Llama, vLLM 0.18 - 0.24 DeepSeek, SGLang's `capture_output=... if i in self.layers_to_capture`):
  ids 0 .. n-1; an id n is never captured, so the drafter gets one aux state fewer than it asks for;
- `self._maybe_add_hidden_state(aux, idx + 1, ...)` after each layer (vLLM's EagleModelMixin), or a
  capture after the loop guarded by `self.end_layer in ...` (vLLM >= 0.25 DeepSeek, SGLang gpt-oss):
  id n too.

A target class (`DeepseekV3ForCausalLM`) rarely runs the loop itself: the class that does is found by
inheritance (its bases) or composition (`self.model = DeepseekV2Model(...)`, a `return LlamaModel(...)`
in a helper), by class name as the other probes resolve them. Engine-agnostic: each engine's probe
says which attribute holds the ids to capture and which helper records one.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass
from typing import Iterable

from compat.probes._ast import ClassHeader, block_end, header_end, class_headers, safe_parse, unparse
from compat.core.tree import EngineTree

# Names that stand for the layer count (the end of the loop) in a capture test or a helper call.
END_NAMES = ("end_layer", "num_layers", "num_hidden_layers", "n_layers")
MAX_DEPTH = 4  # target -> wrapper -> language model -> model: deeper is not how engines compose models


@dataclass(frozen=True)
class Site:
    """One place a forward records an aux hidden state, and whether it can be the last layer's output."""

    final: bool
    how: str  # the test or call, as written
    location: str


@dataclass(frozen=True)
class Reach:
    """What a target class captures: the class that runs the loop, and whether id n is among its ids."""

    target: str
    model: str | None  # the class whose forward captures (None: not found)
    final: bool | None  # None: not found
    how: str
    location: str | None

    def to_json(self) -> dict:
        return {"model": self.model, "how": self.how, "location": self.location}


def capture_sites(tree: EngineTree, dirs: Iterable[str], ids_attrs: tuple[str, ...], helpers: tuple[str, ...],
                  local_copies: bool = False) -> dict[str, list[Site]]:
    """class name -> the aux captures in its own methods, over every model file that tests or records one.
    local_copies: a test on a local variable named like the attribute counts too (LMDeploy's Kimi-K2 forward:
    `aux_hidden_state_layers = self.aux_hidden_state_layers`, then `idx in aux_hidden_state_layers`).

    Only the methods holding a capture are parsed (cut out by indentation), never a whole model file."""
    holder = r"(?:self\.)?" if local_copies else r"self\."
    shape = re.compile(("|".join([*(rf"\bin\s+{holder}{a}\b" for a in ids_attrs), *(rf"\.{h}\(" for h in helpers)])).encode())
    words = [w.encode() for w in (*ids_attrs, *helpers)]  # a substring test first: the regex is slower
    out: dict[str, list[Site]] = {}
    files = {f for d in dirs for f in tree.files(d) if f.endswith(".py") and any(w in tree.read_bytes(f) for w in words)}
    for relpath in sorted(f for f in files if shape.search(tree.read_bytes(f))):
        data = tree.read_bytes(relpath)
        defs = [(m.start(), len(m.group(1)), m.group(2).decode()) for m in _METHOD.finditer(data)]
        headers = class_headers(tree, relpath)
        done: set[int] = set()
        for match in shape.finditer(data):
            method = _enclosing_method(data, defs, match.start())
            if method is None or method[0] in done or method[2] in helpers:
                continue
            done.add(method[0])
            owner = next((h for h in reversed(headers) if h.offset < method[0]), None)
            if owner is None or _TOP_LEVEL_LINE.search(data, owner.offset + len(owner.raw), method[0]):
                continue  # a function outside any class
            fn = _parse_method(tree, relpath, data, method)
            if fn is not None:
                out.setdefault(owner.name, []).extend(_sites(tree, relpath, fn, ids_attrs, helpers, local_copies))
    return {name: sites for name, sites in out.items() if sites}


_METHOD = re.compile(rb"(?m)^([ \t]+)(?:async[ \t]+)?def[ \t]+(\w+)")
_TOP_LEVEL_LINE = re.compile(rb"\n[^\s#)\]}]")


def _enclosing_method(data: bytes, defs: list[tuple[int, int, str]], offset: int) -> tuple[int, int, str, int] | None:
    """(start, indent, name, end) of the innermost indented `def` whose block holds `offset` (defs in file order)."""
    for i in range(bisect.bisect_left(defs, (offset,)) - 1, -1, -1):
        start, indent, name = defs[i]
        end = block_end(data, header_end(data, start), indent)
        if offset < end:
            return start, indent, name, end
    return None


def _parse_method(tree: EngineTree, relpath: str, data: bytes, method: tuple[int, int, str, int]) -> ast.AST | None:
    """The method's own block, parsed alone with the file's line numbers (the whole file when it does not parse).
    Blank lines stand in front of it for the lines above, so no node needs its line number moved afterwards."""
    start, indent, name, end = method
    line = data.count(b"\n", 0, start) + 1
    text = "\n".join(row[indent:] for row in data[start:end].decode("utf-8", errors="replace").split("\n"))
    try:
        return ast.parse("\n" * (line - 1) + text).body[0]
    except (SyntaxError, IndexError):
        module = safe_parse(tree, relpath)
        return next((n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.lineno == line), None) if module is not None else None


def _sites(tree: EngineTree, relpath: str, fn: ast.AST, ids_attrs: tuple[str, ...], helpers: tuple[str, ...],
           local_copies: bool = False) -> list[Site]:
    """Every capture in `fn`, in one walk that carries the loop variables of the `for` statements around each node."""
    out: list[Site] = []
    stack: list[tuple[ast.AST, frozenset[str]]] = [(fn, frozenset())]
    while stack:
        node, names = stack.pop()
        index = None
        tested = node.comparators[0] if isinstance(node, ast.Compare) and node.comparators else None
        if (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In)
                and tested is not None and (_attr_name(tested) in ids_attrs
                                            or local_copies and isinstance(tested, ast.Name) and tested.id in ids_attrs)):
            index = node.left
        elif isinstance(node, ast.Call) and _attr_name(node.func) in helpers and len(node.args) >= 2:
            index = node.args[1]
        if index is not None:
            out.append(Site(_reaches_end(index, set(names)), unparse(node) or "", tree.loc(relpath, node)))
        inner = names
        if isinstance(node, ast.For):
            inner = names | {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            if _attr_name(node.iter) in ids_attrs and isinstance(node.target, ast.Name):
                # `for layer_id in self.layers_to_capture: setattr(self.layers[layer_id], ...)`: the ids index the
                # layers themselves (SGLang Qwen2-MoE), so id n is out of range
                out += [Site(False, f"{unparse(sub)} marks layer {node.target.id} to capture (id n is out of range)",
                             tree.loc(relpath, sub))
                        for sub in ast.walk(node) if isinstance(sub, ast.Subscript) and _attr_name(sub.value) == "layers"
                        and isinstance(sub.slice, ast.Name) and sub.slice.id == node.target.id]
        for child in ast.iter_child_nodes(node):
            stack.append((child, inner if child is not getattr(node, "iter", None) else names))
    return sorted(out, key=lambda site: (int(site.location.rsplit(":", 1)[1]), site.how))


def _attr_name(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else None


def _reaches_end(index: ast.AST, loop_vars: set[str]) -> bool:
    """`idx + 1` inside a loop over the layers, or the end of the loop itself (`self.end_layer`)."""
    if (isinstance(index, ast.BinOp) and isinstance(index.op, ast.Add) and isinstance(index.left, ast.Name)
            and index.left.id in loop_vars and isinstance(index.right, ast.Constant) and index.right.value == 1):
        return True
    if isinstance(index, ast.Call) and getattr(index.func, "id", None) == "len":
        return True  # len(self.layers)
    name = index.attr if isinstance(index, ast.Attribute) else index.id if isinstance(index, ast.Name) else None
    return name in END_NAMES and name not in loop_vars


_CLASS_NAME = re.compile(rb"(?<![\w.\"'])([A-Z]\w*[a-z]\w*)")  # XModel(...), model_cls = XModel; not CONSTANTS


class Resolver:
    """Finds, for a target class, the class whose forward runs the capture: by composition (the classes its
    own body names), then by inheritance (the class headers' bases, first base first). Nothing but the
    capture files is parsed: headers come from a byte scan, a body's calls from a regex over its bytes."""

    def __init__(self, tree: EngineTree, dirs: Iterable[str], sites: dict[str, list[Site]]) -> None:
        self.tree, self.sites = tree, sites
        self.headers: dict[str, list[ClassHeader]] = {}  # class name -> its headers (one per defining file)
        self.files: dict[int, str] = {}
        for d in dirs:
            for relpath in tree.files(d):
                if relpath.endswith(".py"):
                    for header in class_headers(tree, relpath):
                        self.headers.setdefault(header.name, []).append(header)
                        self.files[id(header)] = relpath
        self._memo: dict[str, tuple[str, list[Site]] | None] = {}

    def reach(self, target: str, from_file: str | None = None) -> Reach:
        found = self._capturing(target, from_file, 0)
        if found is None:
            return Reach(target, None, None, "no class with an aux capture found in its bases or its body", None)
        model, sites = found
        final = [s for s in sites if s.final]
        chosen = final[0] if final else sites[0]
        how = (f"also the last layer's output: {chosen.how}" if final
               else f"only each layer's input: {'; '.join(sorted({s.how for s in sites}))}")
        return Reach(target, model, bool(final), how, chosen.location)

    def _capturing(self, name: str, from_file: str | None, depth: int) -> tuple[str, list[Site]] | None:
        if name in self.sites:
            return name, self.sites[name]
        if depth > MAX_DEPTH:
            return None
        if name in self._memo:  # answered, or being answered (a cycle): None until then
            return self._memo[name]
        self._memo[name] = None
        header = self._header(name, from_file)
        found = None
        if header is not None:
            relpath = self.files[id(header)]
            found = self._composed(header, relpath, depth)  # what its own body builds overrides what a base builds
            for base in header.bases if found is None else ():  # then inheritance, in MRO order
                found = self._capturing(base, relpath, depth + 1)
                if found:
                    break
        self._memo[name] = found
        return found

    def _composed(self, header: ClassHeader, relpath: str, depth: int) -> tuple[str, list[Site]] | None:
        """The one capturing answer among the classes its body names (`self.model = XModel(...)`,
        `model_cls = XModel`), else None (none, or several that disagree)."""
        data = self.tree.read_bytes(relpath)
        begin = header.offset + len(header.raw)
        end = _TOP_LEVEL_LINE.search(data, begin)
        body = data[begin:end.start() if end else len(data)]
        named = [n for n in dict.fromkeys(m.decode() for m in _CLASS_NAME.findall(body))
                 if n != header.name and (n in self.sites or n in self.headers)]
        answers = [a for a in (self._capturing(n, relpath, depth + 1) for n in named) if a]
        finals = {any(s.final for s in sites) for _, sites in answers}
        return answers[0] if answers and len(finals) == 1 else None

    def _header(self, name: str, from_file: str | None) -> ClassHeader | None:
        headers = self.headers.get(name) or []
        return next((h for h in headers if self.files[id(h)] == from_file), headers[0] if headers else None)


def facts(reaches: list[Reach]) -> dict:
    """The probe's JSON: the target classes whose capture reaches id n at the top level (so a later release
    that gains it is found by its class name), the others under `before_final` and `unresolved`."""
    out: dict = {}
    before: dict = {}
    unresolved: dict = {}
    for r in sorted(reaches, key=lambda r: r.target):
        if r.final:
            out[r.target] = r.to_json()
        elif r.final is False:
            before[r.target] = r.to_json()
        else:
            unresolved[r.target] = r.how
    out["before_final"] = before
    out["unresolved"] = unresolved
    return out
