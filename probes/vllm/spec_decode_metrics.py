"""The Prometheus counters a vLLM server exposes for speculative decoding, by the names this release uses.

Read from the class that declares them (`SpecDecodingProm`, vllm/v1/spec_decode/metrics.py in 0.10-0.33,
found by the metric prefix wherever it lives). Each counter's role is the field of the spec-decode stats it
counts (`SpecDecodingStats.num_drafts`, `num_draft_tokens`, `num_accepted_tokens`,
`num_accepted_tokens_per_pos`): a counter's name ends with the field it counts, so a renamed prefix or a
moved class is still read. The per-position counter carries one more label (`position`). The counters are
registered only when the server speculates (an early `return` in the class's `__init__`), which is what
lets a client tell "no speculation" from "no traffic".

    {"present": true, "class": "SpecDecodingProm", "location": "file:line",
     "counters": {"num_drafts": {"name", "kind", "sample", "location"}, "num_draft_tokens": ...,
                  "num_accepted_tokens": ..., "num_accepted_tokens_per_pos": {..., "labels": ["position"]}},
     "position_label": "position", "stats_class": "SpecDecodingStats", "stats_location": "file:line",
     "registered_only_when_speculating": {"test": "not self.spec_decoding_enabled", "location"} | null}
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes._ast import class_fields
from compat.probes._metrics import MetricDecl, declarations
from compat.core.tree import EngineTree

HOME = "vllm/v1/spec_decode/metrics.py"
PREFIX = "vllm:spec_decode"
ROLES = ("num_drafts", "num_draft_tokens", "num_accepted_tokens", "num_accepted_tokens_per_pos")  # fallback only


@probe("vllm", "spec_decode_metrics", "Speculative-decoding counters on /metrics (what verify --server reads)", order=80)
def spec_decode_metrics(tree: EngineTree) -> dict:
    for relpath in _candidates(tree):
        decls = declarations(tree, relpath, PREFIX)
        if decls:
            return _read(tree, relpath, decls)
    return {"present": False, "reason": f"no metric named {PREFIX}* is declared under vllm/"}


def _candidates(tree: EngineTree):
    """The usual home first; the byte grep over the package only when it does not declare them."""
    if tree.exists(HOME):
        yield HOME
    yield from (f for f in tree.grep(PREFIX.encode(), under="vllm") if f != HOME)


def _read(tree: EngineTree, relpath: str, decls: list[MetricDecl]) -> dict:
    module = tree.parse(relpath)
    stats_class, fields, stats_line = _stats_fields(module)
    roles = fields or list(ROLES)
    counters: dict[str, dict] = {}
    for decl in decls:
        role = _role(decl.name, roles)
        if role is not None and role not in counters:
            counters[role] = decl.to_json(tree)
    owner = _owner(module, decls[0].lineno)
    per_pos = counters.get("num_accepted_tokens_per_pos") or {}
    return {
        "present": True,
        "class": owner.name if owner else None,
        "location": tree.loc(relpath, owner or decls[0].lineno),
        "counters": counters,
        "position_label": (per_pos.get("labels") or [None])[-1],
        "stats_class": stats_class,
        "stats_location": tree.loc(relpath, stats_line) if stats_line else None,
        "registered_only_when_speculating": _guard(tree, relpath, owner),
    }


def _role(name: str, fields: list[str]) -> str | None:
    """The longest stats field the metric name ends with (`..._accepted_tokens_per_pos` before `..._accepted_tokens`)."""
    bare = name.removesuffix("_total")
    matches = [f for f in fields if bare.endswith(f)]
    return max(matches, key=len) if matches else None


def _stats_fields(module: ast.Module) -> tuple[str | None, list[str], int | None]:
    """The spec-decode stats dataclass: the class with num_drafts and num_accepted_tokens fields."""
    for node in module.body:
        if isinstance(node, ast.ClassDef):
            names = [f.target.id for f in class_fields(node) if isinstance(f.target, ast.Name)]
            if "num_drafts" in names and any("accepted" in n for n in names):
                return node.name, names, node.lineno
    return None, [], None


def _owner(module: ast.Module, lineno: int) -> ast.ClassDef | None:
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.lineno <= lineno <= (node.end_lineno or node.lineno):
            return node
    return None


def _guard(tree: EngineTree, relpath: str, owner: ast.ClassDef | None) -> dict | None:
    """The first `if ...: return` of the declaring class's __init__ (registration skipped without speculation)."""
    init = next((n for n in owner.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if owner else None
    for stmt in init.body if init else ():
        if isinstance(stmt, ast.If) and any(isinstance(s, ast.Return) for s in stmt.body):
            return {"test": ast.unparse(stmt.test), "location": tree.loc(relpath, stmt)}
    return None
