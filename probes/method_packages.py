"""The packages a speculative method imports that are not among the engine's own dependencies (shared by the engines'
`method_packages` probes).

A package is optional when the engine never imports it at module level (outside a function) anywhere in its own
code; the method needs it when its code reaches it without a fallback:

- `checked`: a `has_x()` helper (`return _has_module("arctic_inference")`) called in a branch of the method that
  raises when it is false (vLLM's `_validate_suffix_decoding`: "Arctic Inference is required for suffix decoding.
  Install via `pip install arctic-inference==0.1.1`");
- `imported`: an `import` inside a function of the method's own module, on the function's straight path (not under
  an `if`: a platform or an environment variable chooses those; not under a `try` whose handler carries on without it);
- `guarded`: `try: import x` whose `except ImportError` raises.

Each requirement: {"module", "distribution"?, "requires"?: a version specifier, "how", "message"?, "location"}; the
distribution and the version come from the install line the release prints (`pip install arctic-inference==0.1.1`).
"""

from __future__ import annotations

import ast
import re
import sys
from typing import Any

from compat.core.tree import EngineTree, UnparseableFile

INSTALL = re.compile(r"pip install\s+[\"'`]?([A-Za-z0-9_.\-\[\]]+?)\s*((?:==|>=|~=|<=|>|<)[\w.*+!\-]+)?[\"'`.\s]*$")


def module_requirements(tree: EngineTree, relpath: str) -> list[dict[str, Any]]:
    """What a method's module imports inside its functions, or guards with an ImportError that raises."""
    try:
        module = tree.parse(relpath)
    except UnparseableFile:
        return []
    out: list[dict[str, Any]] = []
    for func in (n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        for stmt in _straight_path(func.body):
            for name in _imported(stmt):
                if _optional(tree, name):
                    out.append({"module": name, "how": f"imported in {func.name}()", "location": tree.loc(relpath, stmt)})
    for node in ast.walk(module):
        if isinstance(node, ast.Try) and _raises_on_import_error(node):
            for stmt in node.body:
                for name in _imported(stmt):
                    if _optional(tree, name):
                        message = _raised_text(node)
                        out.append({"module": name, "how": "imported in a try whose except ImportError raises",
                                    "location": tree.loc(relpath, stmt), "message": message, **install_line(message)})
    unique: dict[str, dict[str, Any]] = {}
    for req in out:
        unique.setdefault(req["module"], req)
    return list(unique.values())


def _straight_path(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements a function always runs (no `if`, `try`, loop or nested function around them)."""
    return [s for s in body if isinstance(s, (ast.Import, ast.ImportFrom))]


def _imported(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Import):
        return [a.name.split(".")[0] for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
        return [stmt.module.split(".")[0]]
    return []


def _optional(tree: EngineTree, name: str) -> bool:
    """Not the engine's own, not the standard library's, and imported at module level by no file of the engine."""
    if name in sys.stdlib_module_names or name == tree.engine or name.startswith("_"):
        return False
    needle = re.compile(rb"^[ \t]*(?:import|from)[ \t]+" + re.escape(name.encode()) + rb"\b", re.M)
    for relpath in tree.grep(name.encode(), under=tree.engine)[:400]:
        data = tree.read_bytes(relpath)
        if not needle.search(data):
            continue
        try:
            module = tree.parse(relpath)
        except UnparseableFile:
            continue
        if any(name in _imported(s) for s in _module_level(module.body)):
            return False
    return True


def _module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module-level statements, those inside module-level `if`/`try` blocks too (not inside functions or classes)."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, ast.If):
            out += _module_level(stmt.body + stmt.orelse)
        elif isinstance(stmt, ast.Try) and not _catches_import_error(stmt):  # a guarded import is no dependency
            out += _module_level(stmt.body)
    return [s for s in out if not isinstance(s, ast.Try) or not _catches_import_error(s)]


def _catches_import_error(node: ast.Try) -> bool:
    return any(h.type is None or "ImportError" in ast.unparse(h.type) or "ModuleNotFoundError" in ast.unparse(h.type)
               for h in node.handlers)


def _raises_on_import_error(node: ast.Try) -> bool:
    for handler in node.handlers:
        names = ast.unparse(handler.type) if handler.type is not None else ""
        if ("ImportError" in names or "ModuleNotFoundError" in names) and any(isinstance(s, ast.Raise) for s in handler.body):
            return True
    return False


def _raised_text(node: ast.AST) -> str:
    return " ".join(c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str))


def install_line(text: str) -> dict[str, Any]:
    """`pip install arctic-inference==0.1.1` in a message -> {"distribution", "requires", "install"}."""
    at = text.find("pip install ")
    if at < 0:
        return {}
    line = text[at:].split("`")[0].strip().rstrip(".")
    m = INSTALL.match(line)
    if not m:
        return {"install": line}
    return {"install": line, "distribution": m.group(1), **({"requires": m.group(2)} if m.group(2) else {})}


def checked_packages(tree: EngineTree, helpers_under: str, callers_under: str,
                     methods: list[str]) -> dict[str, list[dict[str, Any]]]:
    """method -> the packages a `has_x()` check in its branch requires (the branch raises when it is false)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for relpath in tree.grep(b"_has_module(", under=helpers_under):
        for func in (n for n in tree.parse(relpath).body if isinstance(n, ast.FunctionDef) and n.name.startswith("has_")):
            module = next((c.args[0].value for c in ast.walk(func) if isinstance(c, ast.Call) and c.args
                           and isinstance(c.args[0], ast.Constant) and isinstance(c.args[0].value, str)), None)
            if module is None:
                continue
            for user in tree.grep(f"{func.name}()".encode(), under=callers_under):
                for method, req in _branches(tree, user, func.name, module, methods):
                    out.setdefault(method, []).append({**req, "checked_by": f"{func.name}()", "helper": tree.loc(relpath, func)})
    return out


def _branches(tree: EngineTree, user: str, checker: str, module: str, methods: list[str]) -> list[tuple[str, dict]]:
    """The method branches that call `checker()` (directly or through a helper method) and raise when it is false."""
    parsed = tree.parse(user)
    holders = {f.name: f for f in ast.walk(parsed) if isinstance(f, ast.FunctionDef)
               and any(isinstance(c, ast.Call) and getattr(c.func, "id", None) == checker for c in ast.walk(f))}
    out = []
    for branch in ast.walk(parsed):
        if not (isinstance(branch, ast.If) and "method" in ast.unparse(branch.test)):
            continue
        named = [n.value for n in ast.walk(branch.test) if isinstance(n, ast.Constant) and n.value in methods]
        calls = [c for s in branch.body for c in ast.walk(s) if isinstance(c, ast.Call)]
        direct = any(getattr(c.func, "id", None) == checker for c in calls)
        helper = next((holders[c.func.attr] for c in calls if isinstance(c.func, ast.Attribute) and c.func.attr in holders), None)
        if len(named) != 1 or not (direct or helper):
            continue
        scope: list[ast.stmt] = helper.body if helper is not None else branch.body
        raising = next((s for s in (n for st in scope for n in ast.walk(st)) if isinstance(s, ast.If)
                        and checker in ast.unparse(s.test) and any(isinstance(x, ast.Raise) for x in s.body)), None)
        if raising is None:
            continue
        message = _raised_text(ast.Module(body=raising.body, type_ignores=[]))
        out.append((named[0], {"module": module, "how": f"{checker}() in the {named[0]} branch", "message": message,
                               "location": tree.loc(user, raising), "where_checked": tree.loc(user, branch),
                               **install_line(message)}))
    return out
