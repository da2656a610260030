"""How a drafter's aux hidden-state layer ids are chosen: the config keys each model runner
reads (and the offset it adds), the default when none is given, and what is captured.

The runners' readers are found by name wherever they live: `_get_eagle3_aux_layers_from_config`
(v1, `GPUModelRunner`, 0.11.1+) and `get_eagle3_aux_layers_from_config` (v2 runner, 0.17.0+).
Inside them, keys are recognised by shape: `getattr(hf_config, "k")` / `hf_config.k` is a
top-level key; `getattr(hf_config, "dflash_config")` followed by `.get("k")` is a nested one;
`[i + 1 for i in <read>]` is an offset of +1 (DFlash/DSpark ids mean "output of layer i").
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes._ast import find_def, unparse
from compat.probes.vllm._common import MODEL_DIRS
from compat.core.tree import EngineTree

READERS = (
    # (runner, function name, usual home)
    ("v1", "_get_eagle3_aux_layers_from_config", "vllm/v1/worker/gpu_model_runner.py"),
    ("v2", "get_eagle3_aux_layers_from_config", "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py"),
)
INTERFACES = "vllm/model_executor/models/interfaces.py"
LLAMA = "vllm/model_executor/models/llama.py"
DEFAULT_GETTERS = ("get_eagle3_default_aux_hidden_state_layers", "get_eagle3_aux_hidden_state_layers")


@probe("vllm", "aux_layer_ids", "Drafter aux layer ids: config keys, offsets, default", order=70)
def aux_layer_ids(tree: EngineTree) -> dict:
    runners = []
    for runner, name, home in READERS:
        found = _find_function(tree, name, home)
        if found is None:
            continue
        relpath, func = found
        runners.append({
            "runner": runner,
            "function": name,
            "location": tree.loc(relpath, func),
            "keys": _keys(tree, relpath, func),
        })
    out: dict = {"read_from_config": bool(runners)}
    if not runners:
        out["reason"] = (
            "no _get_eagle3_aux_layers_from_config in the model runners: drafter config ids are ignored "
            "and the target's default ids are always used"
        )
        call = _default_call_site(tree)
        if call:
            out["default_used_at"] = call
    out.update(_default(tree))
    out.update(_capture(tree))
    out["runners"] = runners
    return out


def _find_function(tree: EngineTree, name: str, home: str) -> tuple[str, ast.FunctionDef | ast.AsyncFunctionDef] | None:
    needle = f"def {name}(".encode()
    candidates = [home] if tree.exists(home) and needle in tree.read_bytes(home) else []
    candidates = candidates or tree.grep(needle, under="vllm/v1")  # the runners live in vllm/v1
    for relpath in candidates:
        func = find_def(tree, relpath, name)
        if func is not None:
            return relpath, func
    return None


# -- the keys a reader function reads ------------------------------------------------------------
def _keys(tree: EngineTree, relpath: str, func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[dict]:
    parents = {child: node for node in ast.walk(func) for child in ast.iter_child_nodes(node)}
    config_objects = _config_objects(func)
    results = _returned_names(func)
    assigned: dict[str, list[ast.AST]] = {}
    loop_values: dict[str, list[str]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            values = [e.value for e in getattr(node.iter, "elts", []) if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if values:
                loop_values[node.target.id] = values

    def attribute_read(node: ast.AST) -> list[str]:
        """Names of the top-level config attributes `node` reads (several for a loop variable)."""
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and len(node.args) >= 2:
            obj, key = node.args[0], node.args[1]
            if isinstance(obj, ast.Name) and obj.id in config_objects:
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    return [key.value]
                if isinstance(key, ast.Name):
                    return loop_values.get(key.id, [])
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in config_objects:
            if isinstance(node.ctx, ast.Load) and not isinstance(parents.get(node), ast.Call):
                return [node.attr]
        return []

    # Variables that hold a nested config dict: used as `v.get("k")` or `v["k"]`.
    containers: dict[str, list[str]] = {}
    for node in ast.walk(func):
        holder = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            holder = node.func.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            holder = node.value
        if isinstance(holder, ast.Name):
            for value in assigned.get(holder.id, []):
                names = attribute_read(value)
                if names:
                    containers[holder.id] = names

    keys: list[dict] = []

    def add(key: object, where: str, node: ast.AST, offset: int, condition: str | None = None) -> None:  # key: a literal, as written
        entry = {"key": key, "where": where, "offset": offset, "location": tree.loc(relpath, node)}
        if condition:
            entry["unshifted_when"] = condition
        if not any(k["key"] == key and k["where"] == where and k["offset"] == offset for k in keys):
            keys.append(entry)

    for node in sorted(ast.walk(func), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
        # nested: container.get("k") / container["k"]
        nested_key, holder = None, None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
            holder, nested_key = node.func.value, node.args[0]
        elif isinstance(node, ast.Subscript):
            holder, nested_key = node.value, node.slice
        if isinstance(holder, ast.Name) and holder.id in containers and isinstance(nested_key, ast.Constant):
            for where in containers[holder.id]:
                for offset, condition in _offsets(node, parents, results, func):
                    add(nested_key.value, where, node, offset, condition)
            continue
        names = attribute_read(node)
        if not names:
            continue
        flows = _offsets(node, parents, results, func)
        if not flows:
            continue  # a guard (`hasattr`), a condition or a container read, not a key
        for name in names:
            if any(name in c for c in containers.values()):
                continue
            for offset, condition in flows:
                add(name, "top-level", node, offset, condition)
    return keys


def _config_objects(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Local names bound to the drafter's hf_config (`hf_config = ...draft_model_config.hf_config`)."""
    names = {"hf_config"}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and node.value.attr == "hf_config":
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _returned_names(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and node.value is not None:
            out.update(n.id for n in ast.walk(node.value) if isinstance(n, ast.Name))
    return out


def _shift(comp: ast.AST | None) -> int | None:
    """+c for `[i + c for i in ...]`, 0 for `[i for i in ...]`, None for anything else."""
    if isinstance(comp, (ast.ListComp, ast.GeneratorExp)) and len(comp.generators) == 1:
        var = comp.generators[0].target
        elt = comp.elt
        if isinstance(elt, ast.BinOp) and isinstance(elt.left, ast.Name) and isinstance(var, ast.Name) and elt.left.id == var.id:
            if isinstance(elt.right, ast.Constant) and isinstance(elt.right.value, int):
                return elt.right.value if isinstance(elt.op, ast.Add) else -elt.right.value if isinstance(elt.op, ast.Sub) else None
        if isinstance(elt, ast.Name) and isinstance(var, ast.Name) and elt.id == var.id:
            return 0
    return None


def _offsets(node: ast.AST, parents: dict, results: set[str], func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[int, str | None]]:
    """How a read value reaches the returned ids: [(offset, condition under which it is not shifted)]."""
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.comprehension) and child is parent.iter:
            shift = _shift(parents.get(parent))
            return [(shift, None)] if shift is not None else []
        # `x or []`, `list(x)`, `tuple(x)` pass the ids through; any other call (hasattr,
        # isinstance, ...) or expression means the read is a guard or a condition, not ids.
        passes = isinstance(parent, ast.BoolOp) or (
            isinstance(parent, ast.Call) and getattr(parent.func, "id", None) in ("list", "tuple")
        )
        if passes:
            child, parent = parent, parents.get(parent)
            continue
        if isinstance(parent, ast.Assign):
            names = [t.id for t in parent.targets if isinstance(t, ast.Name)]
            if any(n in results for n in names):
                return [(0, None)]
            return _variable_offsets(names, parents, results, func)
        return []
    return []


def _variable_offsets(names: list[str], parents: dict, results: set[str], func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[int, str | None]]:
    """An intermediate variable (`dspark_layer_ids`): how each of its uses reaches the result."""
    shifted: list[tuple[int, ast.Name]] = []
    unshifted: list[tuple[int, ast.Name]] = []
    for use in ast.walk(func):
        if isinstance(use, ast.Name) and use.id in names and isinstance(use.ctx, ast.Load):
            flows = _offsets(use, parents, results, func)
            for offset, _ in flows:
                (unshifted if offset == 0 else shifted).append((offset, use))
    if shifted:
        condition = None
        if unshifted:
            condition = _branch_condition(unshifted[0][1], parents)
        return [(shifted[0][0], condition)]
    return [(0, None)] if unshifted else []


def _branch_condition(node: ast.AST, parents: dict) -> str | None:
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.If):
            test = unparse(parent.test)
            return test if any(child is s for s in parent.body) else f"not ({test})"
        child, parent = parent, parents.get(parent)
    return None


# -- default ids and capture -------------------------------------------------------------------
class _N(ast.NodeTransformer):
    def __init__(self, names: set[str]):
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name(id="n", ctx=node.ctx) if node.id in self.names else node


def _default(tree: EngineTree) -> dict:
    """`(2, n // 2, n - 3)`: the protocol default (0.18.0+) or the Llama target's getter."""
    homes = [p for p in (INTERFACES, LLAMA) if tree.exists(p)]
    for relpath in homes:
        for getter in DEFAULT_GETTERS:
            func = find_def(tree, relpath, getter)
            if func is None:
                continue
            ret = next((n for n in ast.walk(func) if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)), None)
            if ret is None or ret.value is None:  # (it returns a tuple)
                continue
            counts = {
                t.id for n in ast.walk(func) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                and getattr(n.value.func, "id", None) == "len" for t in n.targets if isinstance(t, ast.Name)
            }
            expr = unparse(_N(counts).visit(ast.parse(unparse(ret.value), mode="eval")).body)
            return {"default": expr, "default_source": unparse(ret.value), "default_location": tree.loc(relpath, ret), "default_getter": getter}
    return {"default": None, "default_location": None}


def _default_call_site(tree: EngineTree) -> str | None:
    relpath = READERS[0][2]
    if not tree.exists(relpath):
        return None
    data = tree.read_bytes(relpath)
    for getter in DEFAULT_GETTERS:
        pos = data.find(f".{getter}(".encode())
        if pos >= 0:
            return tree.loc(relpath, data.count(b"\n", 0, pos) + 1)
    return None


def _capture(tree: EngineTree) -> dict:
    """What is stored for layer k: `hidden_states + residual`, taken before layer k runs."""
    # 0.18.0+: EagleModelMixin._maybe_add_hidden_state; before: LlamaModel.forward appends inline.
    if tree.exists(INTERFACES):
        func = find_def(tree, INTERFACES, "_maybe_add_hidden_state")
        if func is not None:
            for node in ast.walk(func):
                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                    return {"capture": f"{unparse(node)} before layer k", "capture_location": tree.loc(INTERFACES, node)}
    for relpath in [p for p in (LLAMA,) if tree.exists(p)] or tree.grep(b"aux_hidden_states.append(", under=MODEL_DIRS[0])[:1]:
        data = tree.read_bytes(relpath)
        pos = data.find(b"aux_hidden_states.append(")
        if pos < 0:
            continue
        line_end = data.find(b"\n", pos)
        try:
            call = ast.parse(data[pos:line_end].decode().strip(), mode="eval").body
        except SyntaxError:
            continue
        if isinstance(call, ast.Call) and call.args:
            return {"capture": f"{unparse(call.args[0])} before layer k", "capture_location": tree.loc(relpath, data.count(b"\n", 0, pos) + 1)}
    return {"capture": None}
