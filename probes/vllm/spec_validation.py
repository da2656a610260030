"""The code vLLM runs on `--speculative-config` before any weight loads, as statements doctor walks with the user's
values (compat/guards/): how the config is built from the line (`EngineArgs.create_speculative_config`), the
fields of `SpeculativeConfig` (defaults, pydantic bounds), and what its construction runs, in pydantic's order:
`__post_init__`, then its `@model_validator(mode="after")` methods. Every function they call that is short is read
too (same class, same module); a long one is kept as what it assigns.

Found by what they are: the class `SpeculativeConfig` wherever it lives (vllm/config.py, vllm/config/__init__.py,
vllm/config/speculative.py), the method that builds it in the EngineArgs module; and, for the target's configs the
builder is given, the keywords `create_engine_config` passes them from the line's arguments
(`ParallelConfig(tensor_parallel_size=self.tensor_parallel_size, ...)`).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes._ast import class_fields, field_name, find_def
from compat.probes._validation import Program, field_entry
from compat.probes.vllm._common import (arg_utils_file, find_class_def, literal_strings, registry_entries, registry_file,
                                        resolve_name, speculative_config_class)

CONSTRUCTION = ("__post_init__",)  # run by the dataclass's __init__, before pydantic's "after" validators
BUILDER = "create_speculative_config"
ENGINE_CONFIG = "create_engine_config"
TARGET_PARAMS = ("target_model_config", "target_parallel_config")
CONFIG_HOMES = ("vllm/config.py", "vllm/config/__init__.py")


@probe("vllm", "spec_validation", "The speculative config's validation, as statements (doctor evaluates them)", order=88)
def spec_validation(tree: EngineTree) -> dict:
    found = speculative_config_class(tree)
    if found is None:
        return {"present": False, "reason": "no class SpeculativeConfig in vllm/"}
    relpath, cls = found
    program = Program(tree, lambda where, name: _constant(tree, where, name))
    program.add_class(relpath, cls)
    name = cls.name
    entry: list[str] = []
    methods = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for method in CONSTRUCTION:
        if method in methods:
            program.function(relpath, methods[method], f"{name}.{method}", name, whole=True)
            entry.append(f"{name}.{method}")
    for node in cls.body:  # pydantic's model validators after construction, in the order the class declares them
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _after_validator(node):
            program.function(relpath, node, f"{name}.{node.name}", name, whole=True)
            entry.append(f"{name}.{node.name}")
    fields = {field_name(f): field_entry(f) for f in class_fields(cls)}
    out: dict[str, Any] = {"present": True, "location": tree.loc(relpath, cls), "entry": None,
                           "classes": [{"name": name, "file": relpath, "line": cls.lineno, "fields": fields,
                                        "construction": entry}], "target_inputs": {}}
    builder = _builder(tree, program)
    if builder is not None:
        out["entry"], inputs, engine_args = builder
        read = _attributes_read(program)
        out["target_inputs"] = {param: {k: v for k, v in keywords.items() if k in read} for param, keywords in inputs.items()}
        wanted = read | {v for keywords in out["target_inputs"].values() for v in keywords.values()}
        out["classes"].append(_engine_args(tree, engine_args, wanted))
    out["registry"] = _registry(tree)
    out["env_reads"] = _env_reads(tree, _attributes_read(program))
    read_back = program.to_json()
    known = {c["name"] for c in out["classes"]}
    out["classes"] += [c for c in read_back.pop("classes") if c["name"] not in known]
    out.update(read_back)
    return out


def _env_reads(tree: EngineTree, read: set[str]) -> dict[str, str]:
    """NAME -> the expression vllm/envs.py computes `envs.NAME` with (`bool(int(os.getenv("VLLM_USE_V1", "1")))`), for
    the names the code reads: the line's environment, else the release's default."""
    relpath = "vllm/envs.py"
    if not tree.exists(relpath):
        return {}
    wanted = {name for name in read if name.startswith("VLLM_")}
    if not wanted:
        return {}
    out: dict[str, str] = {}
    for node in tree.parse(relpath).body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        table = node.value
        if isinstance(target, ast.Name) and target.id == "environment_variables" and isinstance(table, ast.Dict):
            for key, value in zip(table.keys, table.values):
                if isinstance(key, ast.Constant) and key.value in wanted and isinstance(value, ast.Lambda):
                    out[key.value] = ast.unparse(value.body)
    return out


def _registry(tree: EngineTree) -> dict | None:
    """The architectures the model registry lists, and where it refuses one it cannot name (its last raise in
    `_raise_for_unsupported`): what a model config built for an architecture the registry lacks may raise."""
    relpath = registry_file(tree)
    if relpath is None:
        return None
    names = sorted({e.architecture for e in registry_entries(tree)})
    out: dict[str, Any] = {"architectures": names, "location": tree.loc(relpath, 1)}
    fn = find_def(tree, relpath, "_raise_for_unsupported")
    raises = [n for n in (fn.body if fn is not None else []) if isinstance(n, ast.Raise)]
    if raises:
        call = raises[-1].exc
        message = ast.unparse(call.args[0]) if isinstance(call, ast.Call) and call.args else None
        out["raise"] = {"file": relpath, "line": raises[-1].lineno, "function": "_ModelRegistry._raise_for_unsupported",
                        "message": message}
    return out


def _attributes_read(program: Program) -> set[str]:
    """Every attribute name the program's statements mention (what the target configs must carry)."""
    return set(re.findall(r"\.(\w+)", json.dumps([f.get("body") for f in program.functions.values()])))


def _after_validator(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for deco in node.decorator_list:
        if isinstance(deco, ast.Call) and "model_validator" in ast.unparse(deco.func):
            return any(k.arg == "mode" and isinstance(k.value, ast.Constant) and k.value.value == "after" for k in deco.keywords)
    return False


def _builder(tree: EngineTree, program: Program) -> tuple[str, dict[str, dict[str, str]], tuple[str, ast.ClassDef]] | None:
    """The EngineArgs method that builds the config from the line, read into the program, and for each target config
    it is given, the keywords create_engine_config builds that config with from the line's arguments."""
    relpath = arg_utils_file(tree)
    if relpath is None:
        return None
    module = tree.parse(relpath)
    engine_args = next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == "EngineArgs"), None)
    if engine_args is None:
        return None
    program.add_class(relpath, engine_args)
    methods = {n.name: n for n in engine_args.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    build = methods.get(BUILDER)
    if build is None:
        return None
    key = f"EngineArgs.{BUILDER}"
    program.function(relpath, build, key, "EngineArgs", whole=True)
    inputs = _target_inputs(methods)
    return key, inputs, (relpath, engine_args)


def _engine_args(tree: EngineTree, found: tuple[str, ast.ClassDef], wanted: set[str]) -> dict:
    """EngineArgs with the defaults of the fields the walk reads (`ParallelConfig.tensor_parallel_size` followed to
    that class's field): what a line that leaves an option out starts with. Its own construction is not run."""
    relpath, cls = found
    fields = {}
    homes: dict[str, tuple[str, ast.ClassDef] | None] = {}
    for stmt in class_fields(cls):
        name = field_name(stmt)
        if name not in wanted:
            continue
        entry = field_entry(stmt)
        default = entry.get("default")
        if isinstance(default, dict) and isinstance(stmt.value, ast.Attribute) and isinstance(stmt.value.value, ast.Name):
            other = _class_field_default(tree, stmt.value.value.id, stmt.value.attr, homes)
            if other is not None:
                entry["default"] = other[0]
        fields[name] = entry
    return {"name": cls.name, "file": relpath, "line": cls.lineno, "fields": fields, "construction": []}


def _class_field_default(tree: EngineTree, cls_name: str, name: str,
                         homes: dict[str, tuple[str, ast.ClassDef] | None]) -> tuple[Any] | None:
    """The literal default of `cls_name.name`, the class found by its name (it moved between vllm/config files)."""
    if cls_name not in homes:
        homes[cls_name] = find_class_def(tree, cls_name, prefer=CONFIG_HOMES, under="vllm/config") \
            if tree.exists("vllm/config") else find_class_def(tree, cls_name, prefer=CONFIG_HOMES)
    found = homes[cls_name]
    if found is None:
        return None
    for stmt in class_fields(found[1]):
        if field_name(stmt) == name:
            entry = field_entry(stmt)
            default = entry.get("default")
            return None if isinstance(default, dict) or "default" not in entry else (default,)
    return None


def _target_inputs(methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]) -> dict[str, dict[str, str]]:
    """param -> {config attribute: EngineArgs field} for the configs create_engine_config hands the builder."""
    engine = methods.get(ENGINE_CONFIG)
    if engine is None:
        return {}
    assigned: dict[str, ast.AST] = {}
    for node in ast.walk(engine):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, node.value)
    out: dict[str, dict[str, str]] = {}
    for node in ast.walk(engine):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == BUILDER):
            continue
        for keyword in node.keywords:
            if keyword.arg in TARGET_PARAMS and isinstance(keyword.value, ast.Name):
                value = assigned.get(keyword.value.id)
                if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in methods:
                    value = _returned_call(methods[value.func.attr])  # self.create_model_config() -> ModelConfig(...)
                if isinstance(value, ast.Call):
                    out[keyword.arg] = _from_self(value)
    return out


def _returned_call(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Call | None:
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            return node.value
    return None


def _from_self(call: ast.Call) -> dict[str, str]:
    """{keyword: field} for every `keyword=self.field` of a constructor call."""
    return {k.arg: k.value.attr for k in call.keywords if k.arg and isinstance(k.value, ast.Attribute)
            and isinstance(k.value.value, ast.Name) and k.value.value.id == "self"}


def _constant(tree: EngineTree, relpath: str, name: str) -> tuple[Any, str] | None:
    """A module-level name's literal value (a `Literal[...]` alias: its strings), and where it is assigned."""
    found = resolve_name(tree, relpath, name)
    if found is None:
        return None
    where, node = found
    value = node.value
    if value is None:
        return None
    location = tree.loc(where, node)
    if isinstance(value, ast.Subscript) or (isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr)):
        strings = literal_strings(tree, where, value)
        return (strings, location) if strings else None
    try:
        literal = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if isinstance(literal, (set, frozenset)):
        literal = sorted(literal, key=repr)
    if isinstance(literal, (list, tuple, str, int, float, bool, dict)) or literal is None:
        return (list(literal) if isinstance(literal, tuple) else literal), location
    return None


