"""An EAGLE-3 drafter class as the loading readers see it: the class, the model it wraps, its conditions.

`drafter_code(code, class_name)` finds the class (through aliases), the inner model it builds
(`self.model = LlamaModel(...)`: the class in the same file whose `__init__` creates `fc`) and, when its
`load_weights` calls `super().load_weights`, the base class that then decides (`find_base`).

A condition is a list of clauses (all must hold), one per enclosing `if` of a statement
(`branch_conditions`): {"test": source text}, plus {"config": sources, "truthy": bool} when the test is a
drafter-config switch (followed through drafter_values), or {"draft_vocab_differs": bool} for
`draft_vocab_size != target vocab`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

from compat.probes.drafter_code import Function, ModuleCode, Parents, class_attribute, is_self_attr, methods, nodes_of
from compat.probes.drafter_values import Scope, Value, resolve, sources

BaseFinder = Callable[[ModuleCode, ast.ClassDef], tuple[ModuleCode, ast.ClassDef] | None]


@dataclass
class DrafterCode:
    code: ModuleCode
    cls: ast.ClassDef
    inner: ast.ClassDef | None  # the class of `self.<inner_attr>` (LlamaModel, Eagle3MLAModel, ...)
    inner_attr: str | None
    base: tuple[ModuleCode, ast.ClassDef] | None = None  # where super().load_weights goes, if it is called

    def scope(self, cls: ast.ClassDef, func: Function) -> Scope:
        return Scope(self.code, func, cls)


def drafter_code(code: ModuleCode, class_name: str, base_finder: BaseFinder | None = None) -> DrafterCode | None:
    name = code.resolve_class_name(class_name)
    cls = code.classes.get(name)
    if cls is None:
        return None
    inner, attr = _inner_model(code, cls)
    inherits = "load_weights" not in methods(cls)  # the loader of the first base that has one runs
    base = base_finder(code, cls) if base_finder and (_calls_super_load(cls) or inherits) else None
    return DrafterCode(code, cls, inner, attr, base)


def base_class(code: ModuleCode, cls: ast.ClassDef) -> tuple[ModuleCode, ast.ClassDef] | None:
    """The first base of `cls` that compat can read (local, or imported from the engine), with its module."""
    for base in cls.bases:
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        if not name or name in ("Module", "object"):
            continue
        local = code.classes.get(code.resolve_class_name(name))
        if local is not None and local is not cls:
            return code, local
        origin = code.imported(name)
        if origin is not None:
            relpath = origin[0].replace(".", "/") + ".py"
            if code.tree.exists(relpath):
                other = ModuleCode(code.tree, relpath)
                found = other.classes.get(other.resolve_class_name(origin[1]))
                if found is not None:
                    return other, found
    return None


def find_base(code: ModuleCode, cls: ast.ClassDef) -> tuple[ModuleCode, ast.ClassDef] | None:
    """The first base class that defines load_weights: imported (`from x.llama import LlamaForCausalLM`) or local."""
    for base in cls.bases:
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        origin = code.imported(name) if name else None
        if origin is not None:
            relpath = origin[0].replace(".", "/") + ".py"
            if code.tree.exists(relpath):
                other = ModuleCode(code.tree, relpath)
                found = other.classes.get(other.resolve_class_name(origin[1]))
                if found is not None and "load_weights" in methods(found):
                    return other, found
        local = code.classes.get(name) if name else None
        if local is not None and local is not cls and "load_weights" in methods(local):
            return code, local
    return None


def _inner_model(code: ModuleCode, cls: ast.ClassDef) -> tuple[ast.ClassDef | None, str | None]:
    """`self.model = LlamaModel(...)`: the module class the drafter wraps (defined in the same file). The one that
    creates `fc` (an EAGLE head) wins; else the first that builds modules of its own (an MTP predictor, a whole causal
    LM's `self.model = self._init_model(...)`, which returns one)."""
    init = methods(cls).get("__init__")
    candidates: list[tuple[ast.ClassDef, str]] = []
    for node in nodes_of(init) if init else []:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and is_self_attr(node.targets[0]):
            target = node.targets[0]
            assert isinstance(target, ast.Attribute)
            inner = code.classes.get(code.resolve_class_name(_called_class(cls, node.value.func) or ""))
            if inner is not None and inner is not cls and "__init__" in methods(inner):
                if any(creates_fc(n) for n in ast.walk(methods(inner)["__init__"])):
                    return inner, target.attr
                candidates.append((inner, target.attr))
    named = [c for c in candidates if c[1] == "model"]  # a wrapped model is `self.model` in both engines
    chosen = (named or candidates)[:1]
    return (chosen[0][0], chosen[0][1]) if chosen else (None, None)


def _called_class(cls: ast.ClassDef, func: ast.expr) -> str | None:
    """`LlamaModel(...)` -> "LlamaModel"; `self._init_model(...)` -> the class that method returns a call of."""
    if isinstance(func, ast.Name):
        return func.id
    if is_self_attr(func) and class_attribute(cls, func.attr):
        return class_attribute(cls, func.attr)  # self.model_cls(...) with `model_cls = DFlashQwen3Model`
    if is_self_attr(func):
        method = methods(cls).get(func.attr)
        for node in nodes_of(method) if method else []:
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
                return node.value.func.id
    return None


def creates_fc(node: ast.AST) -> TypeGuard[ast.Assign | ast.AnnAssign]:
    return isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
        is_self_attr(t, "fc") for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))


def _calls_super_load(cls: ast.ClassDef) -> bool:
    load = methods(cls).get("load_weights")
    return load is not None and any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "load_weights"
        and isinstance(n.func.value, ast.Call) and getattr(n.func.value.func, "id", None) == "super"
        for n in ast.walk(load))


# -- conditions --------------------------------------------------------------------------------

def condition(d: DrafterCode, cls: ast.ClassDef, func: Function, test: ast.AST, negate: bool = False) -> dict[str, Any]:
    """One clause of a condition: {"test": source text} plus, when the test is a drafter-config
    switch, {"config": sources, "truthy": bool} (it holds when the value the sources give has that
    truthiness), or {"draft_vocab_differs": bool} for `draft_vocab_size != target vocab`."""
    text = ast.unparse(test)
    out: dict[str, Any] = {"test": f"not ({text})" if negate else text}
    inner_test, truthy = test, not negate
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
        sides = [ast.unparse(test.left), ast.unparse(test.comparators[0])]
        if any("draft_vocab_size" in x for x in sides) and any("draft" not in x and "vocab" in x for x in sides):
            out["draft_vocab_differs"] = isinstance(test.ops[0], ast.NotEq) != negate
            return out
    if isinstance(inner_test, ast.UnaryOp) and isinstance(inner_test.op, ast.Not):
        inner_test, truthy = inner_test.operand, not truthy
    if isinstance(inner_test, (ast.Name, ast.Attribute)) or (isinstance(inner_test, ast.Call)
                                                             and getattr(inner_test.func, "id", None) == "getattr"):
        value = _switch_value(d, cls, func, inner_test)
        found = [s for s in sources(value) if "key" in s or "default" in s]
        if any("key" in s for s in found):
            out["config"], out["truthy"] = found, truthy
    return out


def _switch_value(d: DrafterCode, cls: ast.ClassDef, func: Function, node: ast.AST) -> Value | None:
    """A flag's value; `self.model.flag` is the inner model's `self.flag`."""
    if (isinstance(node, ast.Attribute) and d.inner is not None and d.inner_attr
            and isinstance(node.value, ast.Attribute) and is_self_attr(node.value, d.inner_attr)):
        init = methods(d.inner)["__init__"]
        return resolve(ast.Attribute(value=ast.Name("self", ast.Load()), attr=node.attr, ctx=ast.Load()),
                       d.scope(d.inner, init), 10 ** 9)
    return resolve(node, d.scope(cls, func), getattr(node, "lineno", None))


def branch_conditions(d: DrafterCode, cls: ast.ClassDef, func: Function, node: ast.AST,
                      parents: Parents) -> list[dict[str, Any]]:
    out, child = [], node
    while child in parents and child is not func:
        parent = parents[child]
        if isinstance(parent, ast.If) and child is not parent.test:
            out.append(condition(d, cls, func, parent.test, negate=child in parent.orelse))
        child = parent
    return list(reversed(out))
