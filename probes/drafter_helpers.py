"""The helpers a `load_weights` loop hands each name to, as steps that keep the helper's source (name_eval runs it).

Three shapes, read from the loop:

- a rename through a helper: `name = self._remap_old_checkpoint_key(name)`, `name = self._rewrite_spec_layer_name(
  spec_layer, name)` -> {"op": "call", "helper", "args", "location"};
- a selection: `spec_layer = get_spec_layer_idx_from_weight_name(self.config, name)` then `if spec_layer is None: ...
  continue` -> {"op": "select", "helper", "args", "binds": "spec_layer", "keeps": [match], "location"}: names the
  helper gives None are skipped, but those the skipped branch still loads (`"embed_tokens" in name`) are kept;
- a skip on a predicate: `if self.is_unused_checkpoint_weight(name): continue` -> {"op": "skip", "helper", "args"}.

`args` maps each helper parameter to what the loop passes: "name", "config", {"var": x} (a value a selection bound),
or {"const": v}. A helper that cannot be found is left out (the name then goes on unchanged, as before).
"""

from __future__ import annotations

import ast
from typing import Any, Callable

from compat.probes.drafter_class import DrafterCode
from compat.probes.drafter_code import Function, ModuleCode, is_self_attr, methods, nodes_of
from compat.probes.name_eval import helper_source

Step = dict[str, Any]
NameTest = Callable[[ast.AST, set[str]], dict[str, Any] | None]  # drafter_steps.name_test


def helper_steps(d: DrafterCode, cls: ast.ClassDef, loop: ast.For, names: set[str],
                 name_test: NameTest) -> list[tuple[int, Step]]:
    """(line, step) of every helper the loop calls on the name (`name_test` reads a plain name test)."""
    out: list[tuple[int, Step]] = []
    bound: set[str] = set()
    for node in nodes_of(loop):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            step = _assigned(d, cls, loop, node, names, bound, name_test)
            if step is not None:
                out.append((node.lineno, step))
        elif isinstance(node, ast.If) and any(isinstance(s, ast.Continue) for s in node.body):
            step = _predicate(d, cls, node, names, bound, name_test)
            if step is not None:
                out.append((node.lineno, step))
    return out


def _assigned(d: DrafterCode, cls: ast.ClassDef, loop: ast.For, node: ast.Assign, names: set[str],
              bound: set[str], name_test: NameTest) -> Step | None:
    target = node.targets[0]
    assert isinstance(target, ast.Name)
    call = node.value
    if not isinstance(call, ast.Call):
        return None
    helper = find_helper(d, cls, call.func)
    args = _arguments(helper, call, names, bound) if helper is not None else None
    if helper is None or args is None or "name" not in args.values():
        return None
    where = d.code.loc(node)
    if target.id in names and target.id not in bound:
        if _selects(loop, node, target.id):
            bound.add(target.id)
            return {"op": "select", "helper": helper, "args": args, "binds": target.id,
                    "keeps": _kept(loop, node, names, name_test), "location": where}
        return {"op": "call", "helper": helper, "args": args, "location": where}
    return None


def _selects(loop: ast.For, node: ast.Assign, var: str) -> bool:
    """The statement right after tests `var is None` and skips (the selection shape), rather than renaming."""
    nxt = _next_statement(loop, node)
    return (isinstance(nxt, ast.If) and _is_none_test(nxt.test, var)
            and any(isinstance(s, ast.Continue) for s in nxt.body))


def _kept(loop: ast.For, node: ast.Assign, names: set[str], name_test: NameTest) -> list[dict[str, Any]]:
    """Names the skipped branch still loads: `param = params_dict.get(name) if "embed_tokens" in name else None`."""
    nxt = _next_statement(loop, node)
    out = []
    for sub in (n for s in getattr(nxt, "body", []) for n in ast.walk(s)):
        if isinstance(sub, (ast.IfExp, ast.If)):
            match = name_test(sub.test, names)
            if match is not None and match not in out:
                out.append(match)
    return out


def _next_statement(loop: ast.For, node: ast.stmt) -> ast.stmt | None:
    for holder in nodes_of(loop):
        for field in ("body", "orelse"):
            block = getattr(holder, field, None)
            if isinstance(block, list) and node in block:
                i = block.index(node)
                return block[i + 1] if i + 1 < len(block) else None
    return None


def _is_none_test(test: ast.AST, var: str) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == var
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None)


def _predicate(d: DrafterCode, cls: ast.ClassDef, node: ast.If, names: set[str], bound: set[str],
               name_test: NameTest) -> Step | None:
    test = node.test
    if not isinstance(test, ast.Call) or name_test(test, names) is not None:
        return None
    helper = find_helper(d, cls, test.func)
    args = _arguments(helper, test, names, bound) if helper is not None else None
    if helper is None or args is None or "name" not in args.values():
        return None
    return {"op": "skip", "helper": helper, "args": args, "location": d.code.loc(node)}


def find_helper(d: DrafterCode, cls: ast.ClassDef, func: ast.expr) -> dict[str, Any] | None:
    """The source of the function a call names: a method of the class (or its inner model or base), a function of
    the module, or one it imports."""
    found: Function | None = None
    if is_self_attr(func):
        for holder in (cls, d.cls, d.inner, d.base[1] if d.base else None):
            if holder is not None and func.attr in methods(holder):
                found = methods(holder)[func.attr]
                break
    elif isinstance(func, ast.Name):
        nested = _nested(cls, func.id)
        if nested is not None:  # def resolve_param_name(name): ... inside load_weights, with its literals
            return {**helper_source(nested[0]), "closure": nested[1]}
        found = d.code.functions.get(func.id) or _imported_function(d.code, func.id)
    return helper_source(found) if found is not None else None


def _nested(cls: ast.ClassDef, name: str) -> tuple[Function, dict[str, str]] | None:
    """A function defined inside one of the class's methods, and the literal values of that method it reads."""
    for method in methods(cls).values():
        for node in nodes_of(method):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name and node is not method:
                used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                literals = {t.id: ast.unparse(a.value) for a in method.body if isinstance(a, ast.Assign)
                            and isinstance(a.value, (ast.Dict, ast.List, ast.Tuple, ast.Constant))
                            for t in a.targets if isinstance(t, ast.Name) and t.id in used}
                return node, literals
    return None


def _imported_function(code: ModuleCode, name: str) -> Function | None:
    origin = code.imported(name)
    if origin is None:
        return None
    for relpath in (origin[0].replace(".", "/") + ".py", origin[0].replace(".", "/") + "/__init__.py"):
        if code.tree.exists(relpath):
            other = ModuleCode(code.tree, relpath)
            return other.functions.get(origin[1])
    return None


def _arguments(helper: dict[str, Any], call: ast.Call, names: set[str], bound: set[str]) -> dict[str, Any] | None:
    params = [p for p in helper["params"] if p != "self"]
    out: dict[str, Any] = {}
    given = list(zip(params, call.args)) + [(k.arg, k.value) for k in call.keywords if k.arg]
    for param, arg in given:
        if isinstance(arg, ast.Name) and arg.id in bound:
            out[param] = {"var": arg.id}
        elif isinstance(arg, ast.Name) and arg.id in names:
            out[param] = "name"
        elif is_self_attr(arg, "config") or isinstance(arg, ast.Name) and "config" in arg.id:
            out[param] = "config"
        elif isinstance(arg, ast.Constant):
            out[param] = {"const": arg.value}
        else:
            return None
    return out
