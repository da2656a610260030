"""How vLLM's SpeculativeConfig guesses the method when `--speculative-config` gives none (or
gives one detection still runs for), read from the `if/elif` chain that assigns `self.method`.

Found by shape, wherever it lives: an if/elif chain in a SpeculativeConfig method whose first
branch keeps explicit methods (`if self.method in ("eagle", "eagle3"): pass`) and whose other
branches assign `self.method = "..."` from tests on the draft model's path
(`"eagle-" in self.draft_model_config.model.lower()`), its model_type or its architectures.

    {"present": true, "function": "SpeculativeConfig.__post_init__", "location": "file:line",
     "method_none": {"sets": ["ngram", "draft_model"], "location"} | null,
     "explicit_methods": ["eagle", "eagle3", ...],
     "branches": [{"when": <test>, "sets": "eagle", "location"}, ...],
     "otherwise": {"sets": "draft_model"|null, "raises": "NotImplementedError"|null, "location"} | null,
     "samples": {"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B": "eagle", ...}}

A test is {"path_contains": s} (the lower-cased draft path), {"model_type": [...]},
{"architecture": [...]}, {"method": [...]}, {"any": [...]}, {"all": [...]} or
{"other": "source"}. Before 0.10.2 `"eagle3-"` is tested with `"eagle-"` and sets "eagle":
an EAGLE-3 path runs as EAGLE-1. `detect_method(fact, ...)` replays the chain.
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes.vllm._method_registry import read_detection_registry
from compat.probes.vllm._common import literal_strings, resolve_name, speculative_config_class
from compat.core.tree import EngineTree

SAMPLE_PATHS = ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "AngelSlim/Qwen3-8B_eagle3", "yuhuili/EAGLE-LLaMA3-Instruct-8B",
                "lightseekorg/kimi-k2.5-eagle3")


@probe("vllm", "method_autodetection", "Speculative method auto-detection (no method given)", order=64)
def method_autodetection(tree: EngineTree) -> dict:
    found = speculative_config_class(tree)
    if found is None:
        return {"present": False, "reason": "no class SpeculativeConfig in vllm/"}
    relpath, cls = found
    for func in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
        chain = _detection_chain(func)
        if chain is None:
            continue
        out = {"present": True, "function": f"{cls.name}.{func.name}", "location": tree.loc(relpath, chain[0][0][0]),
               "method_none": _method_none(tree, relpath, func)}
        out.update(_read_chain(tree, relpath, chain))
        out["samples"] = {p: detect_method(out, None, p)["method"] for p in SAMPLE_PATHS}
        return out
    registry = read_detection_registry(tree, _test)  # 0.34.0+: detection moved to the speculator configs
    if registry is not None:
        out = {"present": True, **registry, "method_none": _method_none(tree, relpath, _post_init(cls))}
        out["samples"] = {p: detect_method(out, None, p)["method"] for p in SAMPLE_PATHS}
        return out
    return {"present": False, "reason": f"no if/elif chain assigning self.method from the draft path in {relpath}",
            "location": tree.loc(relpath, cls)}


def _post_init(cls: ast.ClassDef) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__post_init__"), None)


def _sets_method(stmts: list[ast.stmt]) -> str | None:
    for stmt in stmts:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "method" for t in stmt.targets):
            if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                return stmt.value.value
    return None


def _chain(node: ast.If) -> tuple[list[tuple[ast.If, ast.expr, list[ast.stmt]]], list[ast.stmt]]:
    branches = []
    while True:
        branches.append((node, node.test, node.body))
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
            continue
        return branches, node.orelse


def _detection_chain(func: ast.FunctionDef | ast.AsyncFunctionDef):
    for node in ast.walk(func):
        if not isinstance(node, ast.If):
            continue
        branches, orelse = _chain(node)
        assigning = [b for b in branches if _sets_method(b[2])]
        mentions_path = any(".lower()" in ast.unparse(t) and "model" in ast.unparse(t) for _, t, _ in branches)
        if len(assigning) >= 2 and mentions_path:
            return branches, orelse
    return None


def _method_none(tree, relpath, func) -> dict | None:
    """`if self.method is None: self.method = "ngram" | "draft_model"` before detection (0.17.0 - 0.33.x;
    from 0.34.0 only a missing or ngram model is preset, a draft checkpoint is detected)."""
    if func is None:
        return None
    for node in ast.walk(func):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "self.method is None":
            sets = [n.value.value for n in ast.walk(node) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
                    and any(isinstance(t, ast.Attribute) and t.attr == "method" for t in n.targets)]
            if sets:
                return {"sets": sets, "location": tree.loc(relpath, node)}
    return None


def _read_chain(tree, relpath, chain) -> dict:
    (branches, orelse) = chain
    out: dict = {"explicit_methods": [], "branches": [], "otherwise": None}
    for node, test, body in branches:
        parsed = _test(tree, relpath, test)
        sets = _sets_method(body)
        if sets is None and all(isinstance(s, ast.Pass) for s in body) and "method" in parsed and not out["branches"]:
            out["explicit_methods"] = parsed["method"]  # `if self.method in (...): pass`
            continue
        out["branches"].append({"when": parsed, "sets": sets, "raises": _raises(body), "location": tree.loc(relpath, node)})
    if orelse:
        out["otherwise"] = {"sets": _sets_method(orelse), "raises": _raises(orelse), "location": tree.loc(relpath, orelse[0])}
    return out


def _raises(stmts: list[ast.stmt]) -> str | None:
    """The exception a branch always raises (a raise directly in it, not one under a nested if)."""
    for stmt in stmts:
        if isinstance(stmt, ast.Raise) and stmt.exc is not None:
            return ast.unparse(stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc)
    return None


def _test(tree, relpath, test: ast.AST) -> dict:
    if isinstance(test, ast.BoolOp):
        parts = [_test(tree, relpath, v) for v in test.values]
        return {"any" if isinstance(test.op, ast.Or) else "all": parts}
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, ast.In) and isinstance(left, ast.Constant) and _is_lowered_path(right):
            return {"path_contains": left.value}
        if isinstance(left, ast.Attribute) and left.attr == "method" and isinstance(op, (ast.In, ast.Eq)):
            return {"method": _strings(tree, relpath, right)}
        if isinstance(left, ast.Attribute) and left.attr == "model_type" and isinstance(op, (ast.In, ast.Eq)):
            return {"model_type": _strings(tree, relpath, right)}
        if isinstance(op, ast.In) and isinstance(right, ast.Attribute) and right.attr == "architectures":
            return {"architecture": _strings(tree, relpath, left)}
    return {"other": ast.unparse(test)}


def _is_lowered_path(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "lower"
            and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "model")


def _strings(tree, relpath, node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [v for e in node.elts for v in _strings(tree, relpath, e)]
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "get_args" and node.args:
        return literal_strings(tree, relpath, node.args[0])
    if isinstance(node, ast.Name):
        found = resolve_name(tree, relpath, node.id)
        if found is not None and found[1].value is not None:  # (resolve_name finds assignments with a value)
            return _strings(tree, found[0], found[1].value) or literal_strings(tree, found[0], found[1].value)
    return [ast.unparse(node)]


def _holds(test: dict, path: str, model_type: str | None, architectures: list[str]) -> bool | None:
    if "any" in test:
        values = [_holds(t, path, model_type, architectures) for t in test["any"]]
        return True if True in values else None if None in values else False
    if "all" in test:
        values = [_holds(t, path, model_type, architectures) for t in test["all"]]
        return False if False in values else None if None in values else True
    if "path_contains" in test:
        return test["path_contains"] in path.lower()
    if "model_type" in test:
        return model_type in test["model_type"] if model_type is not None else None
    if "architecture" in test:
        return any(a in architectures for a in test["architecture"])
    return None  # a switch this replay cannot see (using_transformers_mtp, ...)


def detect_method(fact: dict, method: str | None, path: str, model_type: str | None = None,
                  architectures: list[str] | tuple = ()) -> dict:
    """The method vLLM ends up with: {"method", "location", "certain"} (certain is False when a
    branch before the one taken depends on something this replay cannot see)."""
    if method is None and fact.get("method_none"):
        method = fact["method_none"]["sets"][-1]  # "draft_model" unless the model is "ngram"
    if method in fact.get("explicit_methods", []):
        return {"method": method, "location": fact["location"], "certain": True}
    certain = True
    for branch in fact.get("branches", []):
        if "method" in branch["when"] and set(branch["when"]) == {"method"}:
            if method in branch["when"]["method"]:
                return {"method": branch["sets"] or method, "location": branch["location"], "certain": certain}
            continue
        verdict = _holds(branch["when"], path, model_type, list(architectures))
        if verdict:
            return {"method": branch["sets"], "location": branch["location"], "certain": certain}
        if verdict is None:
            certain = False
    otherwise = fact.get("otherwise") or {}
    return {"method": otherwise.get("sets") or method, "location": otherwise.get("location"), "certain": certain,
            "raises": otherwise.get("raises")}
