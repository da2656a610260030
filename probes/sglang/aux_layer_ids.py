"""How SGLang picks the target layers whose hidden states feed an EAGLE-3 drafter.

- ids come from the drafter's config.json `eagle_config.eagle_aux_hidden_state_layer_ids`
  (0.4.9+; read in ModelRunner, from 0.5.16 in model_runner_components/spec_aux_hidden_state.py);
- without ids the target uses `[2, N // 2, N - 3]`; with ids each target class applies its
  own offset (see eagle3_targets);
- 0.4.9-0.5.10: CudaGraphRunner.__init__ calls `set_eagle3_layers_to_capture()` with no ids
  before ModelRunner applies the drafter's, so captured graphs use the defaults (fixed in
  0.5.11, where the capture is configured before the graphs are built).
"""

from __future__ import annotations

import ast
from collections import Counter

from compat.probes import probe
from compat.probes.sglang._models import CAPTURE_METHOD, eagle3_targets
from compat.probes.sglang._source import enclosing_class, enclosing_def_start, line_of, parse_block
from compat.core.tree import EngineTree

KEY = "eagle_aux_hidden_state_layer_ids"
EXECUTOR_DIR = "sglang/srt/model_executor"


def _occurrences(data: bytes, needle: bytes):
    pos = data.find(needle)
    while pos >= 0:
        yield pos
        pos = data.find(needle, pos + 1)


def _function_at(tree: EngineTree, relpath: str, offset: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    data = tree.read_bytes(relpath)
    start = enclosing_def_start(data, offset)
    node = parse_block(tree, relpath, start) if start is not None else None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _config_reads(tree: EngineTree) -> list[dict]:
    """Where the executor reads the key, and from what: the draft config's `eagle_config`, or its top level."""
    out, seen = [], set()
    quoted = [f'"{KEY}"'.encode(), f"'{KEY}'".encode()]
    for relpath in tree.grep(KEY, EXECUTOR_DIR):
        data = tree.read_bytes(relpath)
        for offset in sorted(o for q in quoted for o in _occurrences(data, q)):
            fn = _function_at(tree, relpath, offset)
            if fn is None or (relpath, fn.lineno) in seen:
                continue
            seen.add((relpath, fn.lineno))
            out.extend(_reads_in(tree, relpath, fn))
    return out


def _reads_in(tree: EngineTree, relpath: str, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[dict]:
    assigned = {}  # name -> source of what it was assigned from
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    assigned[t.id] = ast.unparse(node.value)
    reads = []
    for node in ast.walk(fn):
        holder, key = None, None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            holder, key = node.value, node.slice.value
        elif isinstance(node, ast.Call) and _is_getattr(node) and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            holder, key = node.args[0], node.args[1].value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant)):
            holder, key = node.func.value, node.args[0].value
        if holder is None or not isinstance(key, str):
            continue
        text = ast.unparse(holder)
        origin = assigned.get(text, "") if isinstance(holder, ast.Name) else ""
        where = "eagle_config" if "eagle_config" in text or "eagle_config" in origin else "top-level"
        if key == KEY or (where == "eagle_config" and key != "eagle_config"):
            reads.append({"key": key, "where": where, "read_from": text, "function": fn.name,
                          "location": tree.loc(relpath, node)})
    return reads


def _is_getattr(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id == "getattr"


def _capture_calls(tree: EngineTree) -> list[dict]:
    """Calls of the capture method in the executor: with the drafter's ids, or with none (the defaults)."""
    out = []
    needle = f".{CAPTURE_METHOD}(".encode()
    for relpath in tree.grep(needle, EXECUTOR_DIR):
        data = tree.read_bytes(relpath)
        for offset in _occurrences(data, needle):
            rest = data[offset + len(needle):offset + len(needle) + 200].lstrip()
            owner = enclosing_class(data, offset)
            fn_start = enclosing_def_start(data, offset)
            fn_name = None
            if fn_start is not None:
                header = data[fn_start:data.find(b"(", fn_start)].split()
                fn_name = header[-1].decode() if header else None
            out.append({
                "class": owner[0] if owner else None, "function": fn_name, "with_ids": not rest.startswith(b")"),
                "location": tree.loc(relpath, line_of(data, offset)),
            })
    return out


def _capture_point(tree: EngineTree, relpath: str) -> dict | None:
    """What the inner model stores for id i: read from the loop that checks `layers_to_capture`."""
    data = tree.read_bytes(relpath)
    for offset in _occurrences(data, b"in self.layers_to_capture"):
        fn = _function_at(tree, relpath, offset)
        if fn is None:
            continue
        for loop in ast.walk(fn):
            if not isinstance(loop, ast.For):
                continue
            for node in ast.walk(loop):
                if isinstance(node, ast.If) and "layers_to_capture" in ast.unparse(node.test):
                    for call in ast.walk(node):
                        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "append" and call.args:
                            return {"capture": f"{ast.unparse(call.args[0])} before layer i",
                                    "capture_location": tree.loc(relpath, call)}
                if isinstance(node, ast.keyword) and node.arg and "capture" in node.arg and "layers_to_capture" in ast.unparse(node.value):
                    return {"capture": f"input of layer i (passed as {node.arg}= to the decoder layer)",
                            "capture_location": tree.loc(relpath, node.value)}
    return None


def _rule_text(offset) -> str:
    if offset is None:
        return "ids not accepted (defaults only)"
    if offset == "delegates":
        return "delegates"
    if isinstance(offset, int):
        return f"{offset:+d} unconditional" if offset else "ids used unchanged"
    rule = f"{offset['offset']:+d} when {offset['when']}"
    return rule + (f", else {offset['otherwise']:+d}" if "otherwise" in offset else "")


@probe("sglang", "aux_layer_ids", "Aux hidden-state layer ids (drafter config, defaults, offsets)", order=70)
def aux_layer_ids(tree: EngineTree) -> dict:
    targets = [t for t in eagle3_targets(tree) if t.registered]
    if not targets:
        return {"present": False, "read_from_config": False, "reason": f"no model class defines {CAPTURE_METHOD}: EAGLE-3 capture is not in this release"}
    reads = _config_reads(tree)
    keys = [r for r in reads if r["key"] == KEY]
    other_keys = [r for r in reads if r["key"] != KEY]  # e.g. use_aux_hidden_state (0.5.8+): false turns capture off
    calls = _capture_calls(tree)

    # defaults and rules as the defining classes write them
    own: dict = {}
    for t in targets:
        own.setdefault((t.method.relpath, t.method.cls), t.method)
    llama = next((m for m in own.values() if m.cls == "LlamaForCausalLM"), None)
    with_default = [m for m in own.values() if m.default]
    common = Counter(m.default for m in with_default).most_common(1)
    reference = llama if llama and llama.default else next((m for m in with_default if common and m.default == common[0][0]), None)
    rules: dict[str, list[str]] = {}
    for method in own.values():
        text = _rule_text(method.offset)
        if method.offset == "delegates":
            text = f"delegates to self.{method.delegates_to}"
        rules.setdefault(text, []).append(method.cls)

    graph_default_calls = [c for c in calls if not c["with_ids"] and c["class"] and "GraphRunner" in c["class"]
                           and c["function"] == "__init__"]
    out = {
        "present": True,
        "read_from_config": bool(keys),
        "keys": keys,
        "other_eagle_config_keys": other_keys,
        "default": reference.default if reference else None,
        "default_location": tree.loc(reference.relpath, reference.default_node) if reference else None,
        "offset_rule": [f"{rule} ({', '.join(sorted(classes))})" for rule, classes in rules.items()],
        "capture_calls": calls,
        "cuda_graph_defaults_quirk": bool(keys) and bool(graph_default_calls),
        "cuda_graph_defaults_location": graph_default_calls[0]["location"] if graph_default_calls else None,
    }
    if reference is not None:
        point = _capture_point(tree, reference.relpath)
        if point:
            out.update(point)
    return out
