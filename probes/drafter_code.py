"""One parsed module of an engine, as the drafter readers walk it (no engine import).

`ModuleCode` holds a module's classes, functions and module-level assignments (the runtime branch of an
`if TYPE_CHECKING:` included), resolves class aliases and `from x import y` names; `methods`,
`nodes_of`, `parents_of` and `is_self_attr` are the walks every drafter reader makes, the first two
kept on the node (the trees are cached and read many times).
"""

from __future__ import annotations

import ast
from typing import TypeGuard

from compat.core.tree import EngineTree

Parents = dict[ast.AST, ast.AST]  # child -> parent, below one node
Function = ast.FunctionDef | ast.AsyncFunctionDef


class ModuleCode:
    """One parsed module: its classes, functions and module-level assignments."""

    def __init__(self, tree: EngineTree, relpath: str) -> None:
        self.tree, self.relpath = tree, relpath
        self.module = tree.parse(relpath)
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, Function] = {}
        self.assigns: dict[str, ast.AST] = {}
        stack = list(self.module.body)
        for node in stack:
            if isinstance(node, ast.If):  # `if TYPE_CHECKING: ... else: Base = X`: the runtime branch wins
                stack.extend(node.orelse + node.body)
            elif isinstance(node, ast.ClassDef):
                self.classes.setdefault(node.name, node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.assigns.setdefault(t.id, node.value)

    def loc(self, node: ast.AST | int | None) -> str:
        return self.tree.loc(self.relpath, node)

    def resolve_class_name(self, name: str) -> str:
        """`Eagle3DeepseekV3ForCausalLM = Eagle3DeepseekV2ForCausalLM`: the class an alias names."""
        seen: set[str] = set()
        while name not in self.classes and name not in seen:
            alias = self.assigns.get(name)
            if not isinstance(alias, ast.Name):
                break
            seen.add(name)
            name = alias.id
        return name

    def imported(self, name: str) -> tuple[str, str] | None:
        """(dotted module, original name) of `from x import name` at module level."""
        package = self.relpath.rsplit("/", 1)[0]
        for node in ast.walk(self.module):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        base = node.module or ""
                        if node.level:
                            parts = package.split("/")
                            parts = parts[: len(parts) - (node.level - 1)]
                            base = ".".join(parts + ([node.module] if node.module else []))
                        return base, alias.name
        return None


def methods(cls: ast.ClassDef) -> dict[str, Function]:
    return {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def class_attribute(cls: ast.ClassDef, name: str) -> str | None:
    """`model_cls = DFlashQwen3Model` in a class body: the class name a class attribute holds."""
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and any(
                isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return stmt.value.id
    return None


def load_function(cls: ast.ClassDef) -> Function | None:
    """The function that runs a class's `load_weights`: itself, or the method it hands the weights to on the path
    taken by default (`return self._legacy_load_weights(weights)` after an opt-in branch), two hops at most."""
    own = methods(cls)
    func = own.get("load_weights")
    for _ in range(2):
        if func is None or any(isinstance(n, ast.For) for n in ast.walk(func)):
            return func
        last = func.body[-1] if func.body else None
        call = last.value if isinstance(last, (ast.Return, ast.Expr)) else None
        if not (isinstance(call, ast.Call) and is_self_attr(call.func) and call.func.attr in own):
            return func
        func = own[call.func.attr]
    return func


def nodes_of(node: ast.AST) -> list[ast.AST]:
    """Every node below `node`, in ast.walk order (kept on the node, like parents_of)."""
    cached = getattr(node, "_compat_nodes", None)
    if cached is None:
        cached = list(ast.walk(node))
        setattr(node, "_compat_nodes", cached)
    return cached


def parents_of(node: ast.AST) -> Parents:
    """child -> parent below `node` (kept on the node: the trees are cached and read many times)."""
    cached = getattr(node, "_compat_parents", None)
    if cached is None:
        cached = {child: parent for parent in nodes_of(node) for child in ast.iter_child_nodes(parent)}
        setattr(node, "_compat_parents", cached)
    return cached


def is_self_attr(node: ast.AST, attr: str | None = None) -> TypeGuard[ast.Attribute]:
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
            and (attr is None or node.attr == attr))
