"""Does the release read a vllm-project/speculators drafter (`speculators_model_type`) itself, and how.

vLLM's config loader turns a speculators config into the HF config its drafter class is built from
(vllm/transformers_utils/configs/speculators/): the config parser routes a config.json that has no
`model_type` but a `speculators_config` to `SpeculatorsConfig`, which starts from
`transformer_layer_config` and applies the updater registered for the `speculators_model_type`
(`@register_speculator("eagle3")`): fields copied from the top level with their defaults, and the
drafter architecture (one constant, or a map keyed by the layer config's model_type). Read as

    {"present", "config_class": {"name", "location"},
     "routing": {"location", "when"} | None,
     "types": {"eagle3": {"function", "location"}, ...},
     "eagle3": {"location", "base": {"from", "location"} | None,
                "architecture": {"value", "location"} | {"by", "map", "default", "location"},
                "copies": [{"key", "from", "default", "when", "location"}, ...]},
     "requires": [{"path", "location"}, ...],
     "serves_as_model": {"function", "location", "target_from"} | None}

`translate(fact, config)` replays it on a drafter config: the config the release builds the drafter
from, or the reason the release refuses it. Doctor uses it so a speculators checkpoint is judged as
the release reads it, not as an unknown `Eagle3Speculator` class.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from compat.probes import probe
from compat.probes.vllm._common import find_class_def
from compat.core.tree import EngineTree

HOME = "vllm/transformers_utils/configs/speculators"
CONFIG_PARSER_HOME = "vllm/transformers_utils/config.py"
ROUTE_KEY = "speculators_config"


@probe("vllm", "speculators_format", "speculators-format drafters read natively (SpeculatorsConfig)", order=64)
def speculators_format(tree: EngineTree) -> dict:
    found = find_class_def(tree, "SpeculatorsConfig", prefer=(f"{HOME}/base.py",), under="vllm/transformers_utils")
    if found is None:
        return {"present": False, "reason": "no SpeculatorsConfig class: this release has no speculators-format reader",
                "searched": "vllm/transformers_utils"}
    relpath, cls = found
    types = registered_types(tree)
    eagle3 = eagle3_updater(tree, types.get("eagle3"))
    return {
        "present": "eagle3" in types,
        "config_class": {"name": "SpeculatorsConfig", "location": tree.loc(relpath, cls)},
        "routing": _routing(tree),
        "types": {name: {"function": entry["function"], "location": entry["location"]} for name, entry in types.items()},
        "eagle3": eagle3,
        "requires": _required_paths(tree, relpath, cls),
        "serves_as_model": _serves_as_model(tree),
    }


# -- @register_speculator("name") -------------------------------------------------------------------
def registered_types(tree: EngineTree) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for relpath in tree.grep(b"register_speculator(", under=HOME) or tree.grep(b"register_speculator(", under="vllm"):
        for node in tree.parse(relpath).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for deco in node.decorator_list:
                if (isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == "register_speculator" and deco.args
                        and isinstance(deco.args[0], ast.Constant) and isinstance(deco.args[0].value, str)):
                    out.setdefault(deco.args[0].value, {"function": node.name, "location": tree.loc(relpath, node),
                                                        "node": node, "relpath": relpath})
    return out


def eagle3_updater(tree: EngineTree, entry: dict | None) -> dict | None:
    if entry is None:
        return None
    func, relpath = entry["node"], entry["relpath"]
    source = func.args.args[0].arg if func.args.args else "config_dict"  # the speculators config.json
    copies, architecture = [], None
    for stmt in func.body:
        for node, when in _assignments(stmt, source):
            key = _subscript_key(node.targets[0])
            if key is None:
                continue
            if key == "architectures":
                architecture = _architecture(tree, relpath, func, node)
                continue
            src, default = _read_of(node.value, source)
            if src is not None:
                copies.append({"key": key, "from": src, "default": default, "when": when, "location": tree.loc(relpath, node)})
    return {"location": entry["location"], "base": _base(tree), "architecture": architecture, "copies": copies}


def _assignments(stmt: ast.stmt, source: str):
    """(assignment, when) for `x[k] = ...` at the top of the body or under `if config_dict.get(k) [is not None]:`."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        yield stmt, "always"
    elif isinstance(stmt, ast.If) and not stmt.orelse:
        test = stmt.test
        when = "not None" if (isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.IsNot)) else "truthy"
        for inner in stmt.body:
            if isinstance(inner, ast.Assign) and len(inner.targets) == 1:
                yield inner, when


def _subscript_key(node: ast.AST) -> str | None:
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    return None


def _read_of(value: ast.AST, source: str) -> tuple[str | None, object]:
    """`config_dict.get("k", d)` -> ("k", d); `config_dict["k"]` -> ("k", None)."""
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get"
            and getattr(value.func.value, "id", None) == source and value.args and isinstance(value.args[0], ast.Constant)):
        default = value.args[1].value if len(value.args) > 1 and isinstance(value.args[1], ast.Constant) else None
        key = value.args[0].value
        return (key if isinstance(key, str) else None), default
    if isinstance(value, ast.Subscript) and getattr(value.value, "id", None) == source:
        return _subscript_key(value), None
    return None, None


def _architecture(tree: EngineTree, relpath: str, func: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.Assign) -> dict:
    """`[...] = ["Eagle3LlamaForCausalLM"]`, or `[arch_map[model_type]]` with `model_type = cfg.get("model_type", d)`."""
    value = node.value
    elt = value.elts[0] if isinstance(value, (ast.List, ast.Tuple)) and len(value.elts) == 1 else None
    if isinstance(elt, ast.Constant):
        return {"value": elt.value, "location": tree.loc(relpath, node)}
    if isinstance(elt, ast.Subscript) and isinstance(elt.value, ast.Name):
        table = _local_dict(func, elt.value.id)
        default = _local_default(func, getattr(elt.slice, "id", None))
        return {"by": "transformer_layer_config.model_type", "map": table, "default": default, "location": tree.loc(relpath, node)}
    return {"value": None, "unknown": ast.unparse(value), "location": tree.loc(relpath, node)}


def _local_dict(func: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> dict:
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name and isinstance(node.value, ast.Dict):
            return {k.value: v.value for k, v in zip(node.value.keys, node.value.values)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)}
    return {}


def _local_default(func: ast.FunctionDef | ast.AsyncFunctionDef, name: str | None) -> str | None:
    """`model_type = cfg.get("model_type", "llama")` -> "llama"."""
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name and isinstance(node.value, ast.Call):
            args = node.value.args
            if len(args) > 1 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
                return args[1].value
    return None


def _base(tree: EngineTree) -> dict | None:
    """Where the drafter's HF config starts from transformer_layer_config (update() or .get())."""
    for relpath in tree.grep(b'"transformer_layer_config"', under=HOME):
        for node in ast.walk(tree.parse(relpath)):
            call = node.value if isinstance(node, (ast.Assign, ast.Expr)) else None
            if isinstance(call, ast.Call) and any(isinstance(a, ast.Subscript) and _subscript_key(a) == "transformer_layer_config"
                                                  for a in call.args) and getattr(call.func, "attr", None) == "update":
                return {"from": "transformer_layer_config", "location": tree.loc(relpath, node)}
            if (isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "get" and call.args
                    and isinstance(call.args[0], ast.Constant) and call.args[0].value == "transformer_layer_config"):
                return {"from": "transformer_layer_config", "location": tree.loc(relpath, node)}
    return None


# -- the config parser's routing ------------------------------------------------------------------
def _routing(tree: EngineTree) -> dict | None:
    """`model_type = "speculators" if config_dict.get("speculators_config") is not None else model_type`."""
    files = [CONFIG_PARSER_HOME] if tree.exists(CONFIG_PARSER_HOME) else tree.grep(b'"speculators"', under="vllm/transformers_utils")
    for relpath in files:
        module = tree.parse(relpath)
        parents = {c: p for p in ast.walk(module) for c in ast.iter_child_nodes(p)}
        for node in ast.walk(module):
            if (isinstance(node, ast.IfExp) and isinstance(node.body, ast.Constant) and node.body.value == "speculators"
                    and ROUTE_KEY in ast.unparse(node.test)):
                guard = _guard(node, parents)
                when = f"config.json has a {ROUTE_KEY}" + (" and no model_type" if guard else "")
                return {"location": tree.loc(relpath, node), "when": when, "needs_no_model_type": guard}
    return None


def _guard(node: ast.AST, parents: dict) -> bool:
    """Inside `if model_type is None:`."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "is None" in ast.unparse(node.test) and "model_type" in ast.unparse(node.test):
            return True
    return False


# -- validate_speculators_config -------------------------------------------------------------------
def _required_paths(tree: EngineTree, relpath: str, cls: ast.ClassDef) -> list[dict]:
    func = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "validate_speculators_config"), None)
    if func is None:
        return []
    names: dict[str, str] = {}
    out: list[dict] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            path = _path(node.value, names)
            if path is None:
                continue
            names[node.targets[0].id] = path
            if node.targets[0].id == "_" or not any(path in p["path"] for p in out):
                out.append({"path": path, "location": tree.loc(relpath, node)})
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.NotIn) and isinstance(node.left, ast.Constant):
            out.append({"path": node.left.value, "location": tree.loc(relpath, node)})
    # keep the longest paths (speculators_config.proposal_methods[0].speculative_tokens covers its prefixes)
    return [p for p in out if not any(o is not p and o["path"].startswith(p["path"]) for o in out)]


def _path(node: ast.AST, names: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return names.get(node.id, "" if node.id == "config_dict" else None)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base = _path(node.value, names)
        if base is None:
            return None
        key = node.slice.value
        if isinstance(key, int):
            return f"{base}[{key}]"
        return (f"{base}.{key}" if base else key) if isinstance(key, str) else None
    return None


# -- serving the drafter as --model ---------------------------------------------------------------
def _serves_as_model(tree: EngineTree) -> dict | None:
    for name in ("maybe_override_with_speculators", "maybe_override_with_speculators_target_model"):
        for relpath in tree.grep(f"def {name}(".encode(), under="vllm/transformers_utils"):
            for node in tree.parse(relpath).body:
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    return {"function": name, "location": tree.loc(relpath, node),
                            "target_from": "speculators_config.verifier.name_or_path"}
    return None


# -- replay ------------------------------------------------------------------------------------------
@dataclass
class Translation:
    """What the release makes of a speculators config: the HF config it builds the drafter from, or why not."""

    config: dict | None
    error: str | None = None
    location: str | None = None
    notes: list[str] = field(default_factory=list)


def translate(fact: dict, config: dict) -> Translation | None:
    """None when `config` is not in the speculators format; else the release's reading of it."""
    if "speculators_model_type" not in config and ROUTE_KEY not in config:
        return None
    if not fact.get("present"):
        return Translation(None, fact.get("reason") or fact.get("error") or "this release has no speculators-format reader",
                           (fact.get("config_class") or {}).get("location"))
    routing = fact.get("routing") or {}
    if ROUTE_KEY not in config:
        return Translation(None, f"config.json has speculators_model_type but no {ROUTE_KEY}, so the config parser "
                           "does not route it to SpeculatorsConfig", routing.get("location"))
    if routing.get("needs_no_model_type") and config.get("model_type") is not None:
        return Translation(None, f"config.json sets model_type {config['model_type']!r}, so the config parser "
                           "takes it as that model, not as a speculators config", routing.get("location"))
    kind = config.get("speculators_model_type")
    if kind not in (fact.get("types") or {}):
        return Translation(None, f"speculators_model_type {kind!r} is not one this release reads "
                           f"({', '.join(fact.get('types') or {}) or 'none'})", (fact.get("config_class") or {}).get("location"))
    for required in fact.get("requires") or []:
        if _lookup(config, required["path"]) is _MISSING:
            return Translation(None, f"config.json lacks {required['path']}, which the release requires", required["location"])
    if kind != "eagle3":
        return Translation(None, f"speculators_model_type {kind!r} is not an EAGLE-3 drafter", fact["types"][kind]["location"])
    return _eagle3(fact["eagle3"] or {}, config)


def _eagle3(rule: dict, config: dict) -> Translation:
    layer = config.get("transformer_layer_config")
    built = dict(layer) if isinstance(layer, dict) else {}
    for copy in rule.get("copies") or []:
        src = copy["from"]
        if copy["when"] == "always":
            built[copy["key"]] = config.get(src, copy["default"])
        elif copy["when"] == "not None" and config.get(src) is not None:
            built[copy["key"]] = config[src]
        elif copy["when"] == "truthy" and config.get(src):
            built[copy["key"]] = config[src]
    arch = rule.get("architecture") or {}
    if "by" in arch:
        model_type = built.get("model_type", arch.get("default"))
        name = (arch.get("map") or {}).get(model_type)
        if name is None:
            return Translation(None, f"transformer_layer_config.model_type {model_type!r} has no EAGLE-3 drafter in this "
                               f"release's speculators reader ({', '.join(arch.get('map') or {})})", arch.get("location"))
        built["architectures"] = [name]
    elif arch.get("value"):
        built["architectures"] = [arch["value"]]
    return Translation(built, location=arch.get("location") or rule.get("location"))


_MISSING = object()


def _lookup(config: dict, path: str):
    value: object = config
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("["):
            index = int(part[1:-1])
            if not isinstance(value, list) or len(value) <= index:
                return _MISSING
            value = value[index]
        else:
            if not isinstance(value, dict) or part not in value:
                return _MISSING
            value = value[part]
    return value
