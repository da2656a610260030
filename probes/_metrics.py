"""Prometheus metric declarations in an engine's source, read statically (shared by the metric probes).

A declaration is a call of a metric class (`prometheus_client.Counter(...)`, `Gauge(...)`, or a class
attribute standing for one, `self._counter_cls(...)`) with a `name=` that is a string constant, or a name
bound by a loop over a list of `("name", "doc")` tuples (vLLM >= 0.24 declares its spec-decode counters so).
The kind comes from the callee's name; what a client reads on `/metrics` follows prometheus_client's
exposition: a counter's samples are `<name>_total` (a trailing `_total` in the declared name is dropped
first), a gauge's are `<name>`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from compat.core.tree import EngineTree

KINDS = ("counter", "gauge", "histogram", "summary")


@dataclass(frozen=True)
class MetricDecl:
    name: str            # as declared: "vllm:spec_decode_num_drafts"
    kind: str            # counter | gauge | histogram | summary | unknown
    labels: tuple[str, ...] | None  # label names written as list literals (the extra `position` of a per-position series)
    attribute: str | None  # what the metric object is assigned to (self.counter_x / counter_x), if anything
    relpath: str
    lineno: int

    @property
    def sample_name(self) -> str:
        """The name its samples carry on /metrics (prometheus_client's rule)."""
        if self.kind == "counter":
            return self.name.removesuffix("_total") + "_total"
        return self.name

    def to_json(self, tree: EngineTree) -> dict:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "sample": self.sample_name, "location": tree.loc(self.relpath, self.lineno)}
        if self.labels:
            out["labels"] = list(self.labels)
        return out


def _kind(func: ast.expr) -> str | None:
    text = (func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else "").lower()
    return next((k for k in KINDS if k in text), None)


def declarations(tree: EngineTree, relpath: str, prefix: str = "") -> list[MetricDecl]:
    """Every metric declared in `relpath` whose name starts with `prefix`, in source order."""
    module = tree.parse(relpath)
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(module):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    out: list[MetricDecl] = []
    for node in ast.walk(module):
        if not isinstance(node, ast.Call):
            continue
        kind = _kind(node.func)
        name_arg = next((k.value for k in node.keywords if k.arg == "name"), None)
        if kind is None or name_arg is None:
            continue
        labels = _extra_labels(node, parents)
        attribute = _assigned_to(node, parents)
        if isinstance(name_arg, ast.Constant) and isinstance(name_arg.value, str):
            names = [(name_arg.value, node.lineno)]
        elif isinstance(name_arg, ast.Name):
            names = _loop_names(name_arg.id, node, parents)
        else:
            continue
        out += [MetricDecl(n, kind, labels, attribute, relpath, line) for n, line in names if n.startswith(prefix)]
    return sorted(out, key=lambda d: d.lineno)


def _extra_labels(call: ast.Call, parents: dict) -> tuple[str, ...] | None:
    """`labelnames=labelnames + ["position"]` (directly or through a local variable) -> ("position",)."""
    value = next((k.value for k in call.keywords if k.arg == "labelnames"), None)
    if isinstance(value, ast.Name):
        function = _enclosing(call, parents, (ast.FunctionDef, ast.AsyncFunctionDef))
        found = [a.value for a in ast.walk(function) if isinstance(a, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == value.id for t in a.targets)] if function else []
        value = found[-1] if found else value
    extra: list[str] = []
    for part in ast.walk(value) if value is not None else ():
        if isinstance(part, ast.List):
            extra += [e.value for e in part.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return tuple(extra) or None


def _assigned_to(call: ast.Call, parents: dict) -> str | None:
    node: ast.AST | None = parents.get(call)
    while node is not None and not isinstance(node, (ast.Assign, ast.AnnAssign, ast.stmt)):
        node = parents.get(node)
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
    elif isinstance(node, ast.AnnAssign):
        target = node.target
    else:
        return None
    return target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else None


def _enclosing(node: ast.AST, parents: dict, kinds: tuple) -> ast.AST | None:
    found: ast.AST | None = parents.get(node)
    while found is not None and not isinstance(found, kinds):
        found = parents.get(found)
    return found


def _loop_names(var: str, call: ast.Call, parents: dict) -> list[tuple[str, int]]:
    """The string constants `var` takes in `for var, ... in SEQ` around `call`, SEQ a list literal or a local
    variable assigned list literals (each branch of an if, all of them)."""
    node: ast.AST | None = parents.get(call)
    while node is not None:
        generators = node.generators if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp)) else \
            [node] if isinstance(node, ast.For) else []
        for gen in generators:
            position = _position_in_target(gen.target, var)
            if position is not None:
                return _tuple_constants(gen.iter, position, call, parents)
        node = parents.get(node)
    return []


def _position_in_target(target: ast.expr, var: str) -> int | None:
    if isinstance(target, ast.Name) and target.id == var:
        return -1
    if isinstance(target, ast.Tuple):
        for i, elt in enumerate(target.elts):
            if isinstance(elt, ast.Name) and elt.id == var:
                return i
    return None


def _tuple_constants(seq: ast.expr, position: int, call: ast.Call, parents: dict) -> list[tuple[str, int]]:
    sources: list[ast.expr] = [seq]
    if isinstance(seq, ast.Name):
        function = _enclosing(call, parents, (ast.FunctionDef, ast.AsyncFunctionDef))
        sources = [a.value for a in ast.walk(function) if isinstance(a, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id == seq.id for t in a.targets)] if function else []
    out = []
    for source in sources:
        if not isinstance(source, (ast.List, ast.Tuple)):
            continue
        for elt in source.elts:
            item = elt.elts[position] if position >= 0 and isinstance(elt, ast.Tuple) and len(elt.elts) > position else \
                elt if position < 0 else None
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                out.append((item.value, item.lineno))
    return out


def files_declaring(tree: EngineTree, needle: bytes, under: str) -> list[str]:
    """Files below `under` that mention `needle` (a metric name prefix), the likeliest first."""
    return tree.grep(needle, under=under)
