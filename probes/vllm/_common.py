"""Lookups shared by the vLLM probes (a helper module, not a probe: its name starts with `_`).

Everything here finds things by what they are, not by one path: the usual homes come
first because they are cheap, then a byte grep over the package.
"""

from __future__ import annotations

import ast
import posixpath
import re
import weakref
from dataclasses import dataclass

from compat.core.tree import EngineTree

# Where SpeculativeConfig has lived: 0.10.0, 0.10.1-0.10.2, 0.11.0+ (research §1.1).
SPEC_CONFIG_HOMES = ("vllm/config/speculative.py", "vllm/config/__init__.py", "vllm/config.py")
# Model code: the classic folder, and the per-model packages of 0.24+.
MODEL_DIRS = ("vllm/model_executor/models", "vllm/models")
REGISTRY_HOME = "vllm/model_executor/models/registry.py"
ARG_UTILS_HOME = "vllm/engine/arg_utils.py"


def find_class_def(tree: EngineTree, name: str, prefer: tuple[str, ...] = (), under: str = "vllm") -> tuple[str, ast.ClassDef] | None:
    """Where top-level `class name` is defined. Unlike `_ast.find_class`, a file this Python
    cannot parse raises UnparseableFile (the report records it) instead of being skipped."""
    needles = (f"class {name}(".encode(), f"class {name}:".encode())
    seen: set[str] = set()
    for group in ([p for p in prefer if tree.exists(p)], None):
        for relpath in group if group is not None else tree.files(under):
            if relpath in seen:
                continue
            seen.add(relpath)
            data = tree.read_bytes(relpath)
            if not any(n in data for n in needles):
                continue
            for node in tree.parse(relpath).body:
                if isinstance(node, ast.ClassDef) and node.name == name:
                    return relpath, node
    return None


def speculative_config_class(tree: EngineTree) -> tuple[str, ast.ClassDef] | None:
    return find_class_def(tree, "SpeculativeConfig", prefer=SPEC_CONFIG_HOMES)


def arg_utils_file(tree: EngineTree) -> str | None:
    """The module with `EngineArgs` (vllm/engine/arg_utils.py in every release)."""
    if tree.exists(ARG_UTILS_HOME):
        return ARG_UTILS_HOME
    hits = tree.grep(b"class EngineArgs", under="vllm/engine") or tree.grep(b"class EngineArgs")
    return hits[0] if hits else None


# -- modules and names -----------------------------------------------------------------------
def module_file(tree: EngineTree, dotted: str) -> str | None:
    """`vllm.config.utils` -> `vllm/config/utils.py` (or the package's `__init__.py`)."""
    base = dotted.replace(".", "/")
    for candidate in (f"{base}.py", f"{base}/__init__.py"):
        if tree.exists(candidate):
            return candidate
    return None


def _absolute_module(relpath: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = posixpath.dirname(relpath)  # the package a module (or an __init__.py) belongs to
    for _ in range(node.level - 1):
        package = posixpath.dirname(package)
    parts = [package.replace("/", ".")] + ([node.module] if node.module else [])
    return ".".join(p for p in parts if p)


def imported_from(tree: EngineTree, relpath: str, module: ast.Module, name: str) -> tuple[str, str] | None:
    """(dotted module, original name) when `name` is imported at module level in `module`."""
    for node in module.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return _absolute_module(relpath, node), alias.name
    return None


def module_assignment(module: ast.Module, name: str) -> ast.Assign | ast.AnnAssign | None:
    """The last top-level `name = ...` / `name: T = ...` of a module (also inside `if TYPE_CHECKING:`)."""
    found: ast.Assign | ast.AnnAssign | None = None
    stack = list(module.body)
    for node in stack:
        if isinstance(node, ast.If):
            stack.extend(node.body + node.orelse)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            found = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name and node.value is not None:
            found = node
    return found


def resolve_name(tree: EngineTree, relpath: str, name: str, _depth: int = 0) -> tuple[str, ast.Assign | ast.AnnAssign] | None:
    """Follow `name` from `relpath` to the module-level assignment that defines it (across imports)."""
    if _depth > 5 or not tree.exists(relpath):
        return None
    module = tree.parse(relpath)
    node = module_assignment(module, name)
    if node is not None:
        return relpath, node
    origin = imported_from(tree, relpath, module, name)
    if origin:
        target = module_file(tree, origin[0])
        if target:
            return resolve_name(tree, target, origin[1], _depth + 1)
    for stmt in module.body:  # `from .types import *` (a package re-exporting its submodule's names)
        if isinstance(stmt, ast.ImportFrom) and any(alias.name == "*" for alias in stmt.names):
            target = module_file(tree, _absolute_module(relpath, stmt))
            found = resolve_name(tree, target, name, _depth + 1) if target else None
            if found:
                return found
    return None


def resolve_function(tree: EngineTree, relpath: str, name: str, _depth: int = 0) -> tuple[str, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """Follow a function name from `relpath` to its `def` (across `from x import name`)."""
    if _depth > 5 or not tree.exists(relpath):
        return None
    module = tree.parse(relpath)
    # The last def wins: `@overload` stubs come before the implementation.
    defs = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
    if defs:
        return relpath, defs[-1]
    origin = imported_from(tree, relpath, module, name)
    if origin:
        target = module_file(tree, origin[0])
        if target:
            return resolve_function(tree, target, origin[1], _depth + 1)
    return None


def literal_strings(tree: EngineTree, relpath: str, node: ast.AST | None, _seen: frozenset = frozenset()) -> list[str]:
    """Flatten a `Literal[...]` type, following aliases (`Literal["a", OtherAlias]`, `X | None`,
    `Optional[X]`, `Union[...]`) to their definitions, in this module or imported ones."""
    if node is None:
        return []
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else []
    if isinstance(node, ast.Tuple):
        return [v for elt in node.elts for v in literal_strings(tree, relpath, elt, _seen)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return literal_strings(tree, relpath, node.left, _seen) + literal_strings(tree, relpath, node.right, _seen)
    if isinstance(node, ast.Subscript):
        head = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
        if head in ("Literal", "Optional", "Union", "Annotated"):
            inner = node.slice
            if head == "Annotated" and isinstance(inner, ast.Tuple):
                inner = inner.elts[0]
            return literal_strings(tree, relpath, inner, _seen)
        return []
    if isinstance(node, ast.Name) and node.id not in _seen:
        found = resolve_name(tree, relpath, node.id)
        if found:
            where, assign = found
            return literal_strings(tree, where, assign.value, _seen | {node.id})
    return []


# -- the model registry -----------------------------------------------------------------------
@dataclass(frozen=True)
class RegistryEntry:
    table: str  # the dict's name, e.g. _TEXT_GENERATION_MODELS
    architecture: str
    module: str  # as written: "deepseek_v2" or "vllm.models.deepseek_v32"
    cls: str
    lineno: int


def registry_file(tree: EngineTree) -> str | None:
    if tree.exists(REGISTRY_HOME):
        return REGISTRY_HOME
    hits = tree.grep(b"_SPECULATIVE_DECODING_MODELS", under="vllm/model_executor")
    return hits[0] if hits else None


_REGISTRY_CACHE: "weakref.WeakKeyDictionary[EngineTree, list[RegistryEntry]]" = weakref.WeakKeyDictionary()
# A module-level dict literal: `_TEXT_GENERATION_MODELS = {` (optionally annotated).
_DICT_START = re.compile(rb"^([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=[ \t]*\{", re.M)


def registry_entries(tree: EngineTree) -> list[RegistryEntry]:
    """Every `"Arch": ("module", "Class")` entry of the module-level dicts of the model registry."""
    cached = _REGISTRY_CACHE.get(tree)
    if cached is None:
        cached = _REGISTRY_CACHE[tree] = _read_registry(tree)
    return cached


def _read_registry(tree: EngineTree) -> list[RegistryEntry]:
    relpath = registry_file(tree)
    if relpath is None:
        return []
    return _dict_entries(_registry_dicts(tree, relpath))


def _registry_dicts(tree: EngineTree, relpath: str) -> list[ast.stmt]:
    """The registry's top-level dict assignments, each parsed from its own slice (the module is
    large and the dicts are all a probe needs); the whole module when a slice does not parse."""
    data = tree.read_bytes(relpath)
    out: list[ast.stmt] = []
    for m in _DICT_START.finditer(data):
        close = data.find(b"\n}", m.end())
        if close < 0:
            return tree.parse(relpath).body
        try:
            stmt = ast.parse(data[m.start():close + 2]).body[0]
        except SyntaxError:
            return tree.parse(relpath).body
        ast.increment_lineno(stmt, data.count(b"\n", 0, m.start()))
        out.append(stmt)
    return out


def _dict_entries(body: list[ast.stmt]) -> list[RegistryEntry]:
    out = []
    for node in body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if not isinstance(target, ast.Name) or not isinstance(value, ast.Dict):
            continue
        for key, val in zip(value.keys, value.values):
            if (
                isinstance(key, ast.Constant) and isinstance(key.value, str)
                and isinstance(val, ast.Tuple) and len(val.elts) == 2
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in val.elts)
            ):
                module_name, class_name = [e.value for e in val.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                out.append(RegistryEntry(target.id, key.value, module_name, class_name, key.lineno))
    return out


def registry_module_file(tree: EngineTree, module: str) -> str | None:
    """The file a registry entry's module names: bare names live in vllm/model_executor/models/."""
    dotted = module if module.startswith("vllm.") else f"vllm.model_executor.models.{module}"
    return module_file(tree, dotted)
