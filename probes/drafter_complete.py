"""What a model class's `load_weights` does about what the checkpoint lacks, read from its code.

- `returns_loaded`: it returns the names it loaded (`return loaded_params`, `return loader.load_weights(...)`):
  vLLM's default loader then compares them with every parameter and raises on the ones never loaded (the
  weights_check probe says when); a class returning nothing leaves them at their initial values, silently;
- `completeness`: a `raise` after the weights loop, inside a loop over layer indices (vLLM's DeepSeekMTP from
  0.17.0: "MTP speculative decoding layer {layer_idx} weights missing from checkpoint"), with its condition;
- `prologue`: the statements before the weights loop, as source text with their first line, so the `assert`s and
  `raise`s they make on the model config (SGLang 0.4.4's NextN: `assert num_nextn_layers ==
  self.config.num_hidden_layers`) can be run on a config by compat.probes.name_eval.refusal.
"""

from __future__ import annotations

import ast
import re
import textwrap
from typing import Any

from compat.probes.drafter_class import DrafterCode
from compat.probes.drafter_code import Function, ModuleCode, load_function, methods, nodes_of
from compat.probes.drafter_steps import weights_loop


def loader_of(d: DrafterCode) -> tuple[ModuleCode, Function] | None:
    """The load_weights that runs: the class's own, else its base's (super().load_weights or inherited)."""
    own = load_function(d.cls)
    if own is not None:
        return d.code, own
    base = load_function(d.base[1]) if d.base is not None else None
    if d.base is not None and base is not None:
        return d.base[0], base
    return None


def returns_loaded(d: DrafterCode) -> dict[str, Any] | None:
    found = loader_of(d)
    if found is None:
        return None
    code, func = found
    returns = [n for n in ast.walk(func) if isinstance(n, ast.Return) and n.value is not None
               and not (isinstance(n.value, ast.Constant) and n.value.value is None)]
    own = [r for r in returns if _owner(func, r) is func]
    return {"returns": bool(own), "location": code.loc(own[0] if own else func)}


def _owner(func: Function, node: ast.AST) -> Function:
    """The innermost function holding `node` (a return inside a nested generator is not load_weights' own)."""
    owner = func
    for inner in ast.walk(func):
        if inner is not func and isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if any(n is node for n in ast.walk(inner)):
                return inner  # type: ignore[return-value]
    return owner


def completeness(d: DrafterCode) -> dict[str, Any] | None:
    """A `raise` after the weights loop, in a loop over layer indices: a layer without tensors is refused."""
    found = loader_of(d)
    if found is None:
        return None
    code, func = found
    loop = weights_loop(func)
    after = loop[0].end_lineno or loop[0].lineno if loop else 0
    for node in nodes_of(func):
        if isinstance(node, ast.For) and node.lineno > after and "range" in ast.unparse(node.iter):
            for sub in ast.walk(node):
                if isinstance(sub, ast.If) and any(isinstance(s, ast.Raise) for s in sub.body):
                    raised = next(s for s in sub.body if isinstance(s, ast.Raise))
                    return {"condition": ast.unparse(sub.test), "error": raise_message(raised),
                            "over": ast.unparse(node.iter), "location": code.loc(raised)}
    return None


def raise_message(node: ast.Raise) -> str:
    """The message a `raise` gives, its f-string holes as written (`{layer_idx}`)."""
    exc = node.exc
    if isinstance(exc, ast.Call) and exc.args:
        arg = exc.args[0]
        if isinstance(arg, ast.JoinedStr):
            return "".join(str(v.value) if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                           for v in arg.values if isinstance(v, (ast.Constant, ast.FormattedValue)))
        return str(arg.value) if isinstance(arg, ast.Constant) else ast.unparse(arg)
    return ast.unparse(exc) if exc is not None else "raise"


def prologue(d: DrafterCode) -> dict[str, Any] | None:
    """The statements of load_weights before its weights loop: their source (dedented) and first line."""
    found = loader_of(d)
    if found is None:
        return None
    code, func = found
    loop = weights_loop(func)
    stmts = []
    for stmt in func.body:
        if loop is not None and any(n is loop[0] for n in ast.walk(stmt)):
            break
        stmts.append(stmt)
    stmts = [s for s in stmts if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not stmts or not any(isinstance(n, (ast.Assert, ast.Raise)) for s in stmts for n in ast.walk(s)):
        return None
    lines = code.tree.read_bytes(code.relpath).decode("utf-8", "replace").splitlines()
    first, last = stmts[0].lineno, max(s.end_lineno or s.lineno for s in stmts)
    return {"source": textwrap.dedent("\n".join(lines[first - 1:last])), "first_line": first, "relpath": code.relpath,
            "location": code.loc(stmts[0])}


# -- where an MTP class finds its layers in the target checkpoint ---------------------------------------------------

LOAD_PATH = re.compile(r"load|nextn|mtp|spec", re.I)  # the functions of a class chain that pick the MTP layers


def mtp_layers(d: DrafterCode) -> dict[str, Any] | None:
    """`f"model.layers.{nextn_layer_id}"` with nextn_layer_id = config.num_hidden_layers (SGLang's NextN loaders,
    vLLM's get_spec_layer_idx_from_weight_name): the prefix of the first MTP layer in the target checkpoint, found in
    the load path of the class and its bases (their files followed through imports): {"prefix": "model.layers.",
    "after": "num_hidden_layers", "location"}. None when no such name is built."""
    for code, func in _load_path(d.code, d.cls):
        derived = _derived_from_layer_count(func)
        for node in nodes_of(func):
            if not isinstance(node, ast.JoinedStr) or len(node.values) < 2:
                continue
            head, hole = node.values[0], node.values[1]
            if not (isinstance(head, ast.Constant) and isinstance(head.value, str) and head.value.endswith("layers.")
                    and isinstance(hole, ast.FormattedValue)):
                continue
            text = ast.unparse(hole.value)
            if "num_hidden_layers" in text or any(isinstance(n, ast.Name) and n.id in derived for n in ast.walk(hole.value)):
                return {"prefix": head.value, "after": "num_hidden_layers", "location": code.loc(node)}
    return None


def _derived_from_layer_count(func: Function) -> set[str]:
    out: set[str] = set()
    for node in nodes_of(func):
        if isinstance(node, ast.Assign) and "num_hidden_layers" in ast.unparse(node.value):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return out


def _load_path(code: ModuleCode, cls: ast.ClassDef, depth: int = 0) -> list[tuple[ModuleCode, Function]]:
    """The loading functions of a class and of its bases, nearest first."""
    out = [(code, f) for name, f in methods(cls).items() if LOAD_PATH.search(name)]
    if depth >= 5:
        return out
    for base in cls.bases:
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        found = _class_named(code, name) if name else None
        if found is not None and found[1] is not cls:
            out += _load_path(found[0], found[1], depth + 1)
    return out


def _class_named(code: ModuleCode, name: str) -> tuple[ModuleCode, ast.ClassDef] | None:
    local = code.classes.get(code.resolve_class_name(name))
    if local is not None:
        return code, local
    origin = code.imported(name)
    if origin is None:
        return None
    for relpath in (origin[0].replace(".", "/") + ".py", origin[0].replace(".", "/") + "/__init__.py"):
        if code.tree.exists(relpath):
            other = ModuleCode(code.tree, relpath)
            found = other.classes.get(other.resolve_class_name(origin[1]))
            if found is not None:
                return other, found
    return None
