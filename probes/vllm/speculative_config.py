"""`SpeculativeConfig`: the keys `--speculative-config` accepts, the `method` values, and
whether an unknown key is refused.

The class moved (vllm/config.py -> vllm/config/__init__.py -> vllm/config/speculative.py) and
its `method` type became a tree of `Literal` aliases (`SpeculativeMethod` -> `EagleModelTypes`
-> `MTPModelTypes` ...); both are followed from the source. Whether unknown keys are refused
depends on two things read here: how the CLI builds the config (`SpeculativeConfig(**d)` or
`from_dict`, in `EngineArgs.create_speculative_config`) and what kind of dataclass it is (a
standard dataclass raises TypeError; a pydantic dataclass ignores extra keys unless its config
says `extra="forbid"`, which vLLM's `@config` decorator adds from 0.16.0).
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes._ast import class_fields, decorator_names, field_name, find_def, methods, unparse
from compat.probes.vllm._common import (
    arg_utils_file,
    imported_from,
    literal_strings,
    resolve_function,
    resolve_name,
    speculative_config_class,
)
from compat.core.tree import EngineTree


@probe("vllm", "speculative_config", "SpeculativeConfig: keys of --speculative-config", order=20)
def speculative_config(tree: EngineTree) -> dict:
    found = speculative_config_class(tree)
    if found is None:
        return {"present": False, "reason": "no class SpeculativeConfig in vllm/ (looked in vllm/config*, then every file)"}
    relpath, cls = found
    fields = [
        {
            "name": field_name(stmt),
            "type": unparse(stmt.annotation),
            "default": unparse(stmt.value),
            "location": tree.loc(relpath, stmt),
        }
        for stmt in class_fields(cls)
    ]
    out = {
        "present": True,
        "location": tree.loc(relpath, cls),
        "decorators": [unparse(d) for d in cls.decorator_list],
        "fields": fields,
    }
    out.update(_methods(tree, relpath, cls))
    out.update(_unknown_keys(tree, relpath, cls))
    return out


# -- accepted `method` values ------------------------------------------------------------------
def _methods(tree: EngineTree, relpath: str, cls: ast.ClassDef) -> dict:
    field = next((f for f in class_fields(cls) if field_name(f) == "method"), None)
    if field is None:
        return {"methods": [], "methods_location": None}
    values = list(dict.fromkeys(literal_strings(tree, relpath, field.annotation)))
    # The location of the alias the field names (SpeculativeMethod), else of the field.
    location = tree.loc(relpath, field)
    for name in (n.id for n in ast.walk(field.annotation) if isinstance(n, ast.Name)):
        alias = resolve_name(tree, relpath, name)
        if alias is not None:
            location = tree.loc(alias[0], alias[1])
            break
    return {"methods": values, "methods_location": location}


# -- unknown keys ---------------------------------------------------------------------------------
def _unknown_keys(tree: EngineTree, relpath: str, cls: ast.ClassDef) -> dict:
    construction = _construction(tree, relpath, cls)
    policy, policy_why = _extra_key_policy(tree, relpath, cls)
    out: dict = {"construction": construction, "extra_keys": policy}
    if construction is None:
        out["rejects_unknown_keys"] = None
        out["rejects_unknown_keys_reason"] = "EngineArgs.create_speculative_config not found; cannot tell how the CLI builds the config"
        return out
    how = f"the CLI builds it with {construction['call']} ({construction['location']})"
    if construction.get("from_dict"):
        how += f", which returns {construction['from_dict']} ({construction['from_dict_location']})"
    if not construction["splats_dict"]:
        out["rejects_unknown_keys"] = None
        out["rejects_unknown_keys_reason"] = how + "; the keys do not reach the constructor as keyword arguments"
        return out
    out["rejects_unknown_keys"] = policy in ("forbid", "error")
    out["rejects_unknown_keys_reason"] = f"{how}; {policy_why}"
    return out


def _construction(tree: EngineTree, relpath: str, cls: ast.ClassDef) -> dict | None:
    arg_utils = arg_utils_file(tree)
    func = find_def(tree, arg_utils, "create_speculative_config") if arg_utils else None
    if func is None or arg_utils is None:
        return None
    for call in (n for n in ast.walk(func) if isinstance(n, ast.Call)):
        target = call.func
        if isinstance(target, ast.Name) and target.id == cls.name:
            return {
                "call": unparse(call),
                "location": tree.loc(arg_utils, call),
                "splats_dict": any(k.arg is None for k in call.keywords),
            }
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == cls.name:
            out = {"call": unparse(call), "location": tree.loc(arg_utils, call), "splats_dict": False}
            method = methods(cls).get(target.attr)
            inner = _returned_cls_call(method) if method else None
            if inner is not None:
                out.update(from_dict=unparse(inner), from_dict_location=tree.loc(relpath, inner),
                           splats_dict=any(k.arg is None for k in inner.keywords))
            return out
    return None


def _returned_cls_call(method: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Call | None:
    """`return cls(**d)` inside a classmethod such as `from_dict`."""
    for node in ast.walk(method):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Name) and func.id == "cls":
                return node.value
    return None


def _extra_key_policy(tree: EngineTree, relpath: str, cls: ast.ClassDef) -> tuple[str | None, str]:
    """("error" | "forbid" | "ignore" | None, why) for keyword arguments that are not fields."""
    module = tree.parse(relpath)
    kinds = []
    for dec, name in zip(cls.decorator_list, decorator_names(cls)):
        if name == "dataclass":
            kinds.append(_dataclass_kind(tree, relpath, module, dec, f"@{unparse(dec)}:"))
        else:  # a project decorator (vLLM's @config): read what it does
            found = resolve_function(tree, relpath, name)
            if found is not None:
                where, func = found
                inner = _dataclass_call_in(func)
                if inner is not None:
                    label = f"@{name} ({tree.loc(where, func)}) makes it a dataclass:"
                    kinds.append(_dataclass_kind(tree, where, tree.parse(where), inner, label, _mentions_forbid(func)))
    for policy in ("forbid", "error", "ignore"):
        for kind in kinds:
            if kind[0] == policy:
                return kind
    return None, "not a dataclass as far as the source shows"


def _dataclass_kind(tree: EngineTree, relpath: str, module: ast.Module, dec: ast.AST, label: str, forbid: bool = False) -> tuple[str, str]:
    name = dec.func if isinstance(dec, ast.Call) else dec
    origin = None
    if isinstance(name, ast.Name):
        imported = imported_from(tree, relpath, module, name.id)
        origin = imported[0] if imported else None
    elif isinstance(name, ast.Attribute):
        origin = unparse(name.value)
    if origin and "pydantic" in origin:
        if forbid or _mentions_forbid(dec):
            return "forbid", f"{label} a pydantic dataclass with extra='forbid', so unknown keys raise a ValidationError"
        return "ignore", f"{label} a pydantic dataclass without extra='forbid', so pydantic drops unknown keys silently"
    return "error", f"{label} a standard dataclass, so unknown keys raise TypeError"


def _dataclass_call_in(func: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Call | None:
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "dataclass":
            return node
    return None


def _mentions_forbid(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.keyword) and sub.arg == "extra" and isinstance(sub.value, ast.Constant):
            if sub.value.value == "forbid":
                return True
    return False
