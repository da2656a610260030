"""What vLLM does to a drafter config's `architectures` and `model_type` before it looks the class up.

Two rewrites, both read from the code:

1. `EAGLEConfig.__init__` (vllm/transformers_utils/configs/eagle.py) renames each architecture
   per method: `[arch if <keep test> else f"Eagle3{arch}" for arch in ...]`. Read as
       "eagle_config": {"location", "class_location",
                        "methods": {"eagle3": {"keep_if": <name test>, "prefix": "Eagle3",
                                               "location"}, "eagle": {...}, "dflash": {...}}}
   where a name test is {"startswith": s} | {"endswith": s} | {"equals": s} | {"contains": s}
   | {"any": [...]} | {"all": [...]} | {"not": test}. 0.10.0 keeps names starting with Eagle3;
   0.10.1+ also names ending with it.
2. `SpeculativeConfig.hf_config_override`, passed as `hf_overrides` of the draft ModelConfig
   whatever the method, rewrites target model types to MTP drafters. Read as ordered rules:
       "mtp_override": {"function", "location", "used_at": [...],
                        "rules": [{"trigger": {"field": "model_type"|"architecture",
                                               "values": [...], "match": "equals"|"substring_of"},
                                   "extra_condition": "..."|null, "sets_model_type": "..."|null,
                                   "sets_architectures": [[...], ...]|null, "returns": bool,
                                   "location"}, ...],
                        "model_types": {"deepseek_v3": {"model_type": "deepseek_mtp",
                                        "architectures": ["DeepSeekMTPModel"], "conditional": false,
                                        "location"}, ...},
                        "architectures": {"MiMoForCausalLM": {...}, ...}}
   `model_types` / `architectures` are the rules replayed from each trigger value (only those that
   change something); their "architectures" lists the possible `architectures[0]` afterwards
   (two when the code picks one with an `if`), as written.

`eagle_architecture(fact, method, arch)` and `mtp_rewrite(fact, model_type, architecture)`
apply the fact to a drafter config (for doctor checks).
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes.drafter_replay import name_matches
from compat.probes.drafter_steps import name_test
from compat.probes.name_eval import helper_source
from compat.probes.vllm._common import find_class_def, speculative_config_class
from compat.core.tree import EngineTree

EAGLE_CONFIG_HOME = "vllm/transformers_utils/configs/eagle.py"


@probe("vllm", "drafter_architecture_rename", "Drafter architecture and model_type rewrites (EAGLEConfig, MTP override)", order=63)
def drafter_architecture_rename(tree: EngineTree) -> dict:
    eagle = eagle_config_rule(tree)
    mtp = mtp_override(tree)
    out: dict = {"present": eagle is not None or mtp is not None, "eagle_config": eagle, "mtp_override": mtp}
    if not out["present"]:
        out["reason"] = "neither EAGLEConfig nor SpeculativeConfig.hf_config_override found"
    return out


# -- EAGLEConfig -----------------------------------------------------------------------------
def eagle_config_rule(tree: EngineTree) -> dict | None:
    found = find_class_def(tree, "EAGLEConfig", prefer=(EAGLE_CONFIG_HOME,), under="vllm/transformers_utils")
    if found is None:
        return None
    relpath, cls = found
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None:
        return None
    methods: dict[str, dict] = {}
    for node in ast.walk(init):
        if isinstance(node, ast.If):
            method = _method_tested(node.test)
            if method is None:
                continue
            rule = _rename_rule(node.body)
            if rule is not None:
                rule["location"] = tree.loc(relpath, rule.pop("node"))
                methods.setdefault(method, rule)
    return {"location": tree.loc(relpath, init), "class_location": tree.loc(relpath, cls), "methods": methods}


def _method_tested(test: ast.AST) -> str | None:
    """`method == "eagle3"` -> "eagle3"."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        compared = test.comparators[0]
        if isinstance(test.left, ast.Name) and "method" in test.left.id and isinstance(compared, ast.Constant) and isinstance(compared.value, str):
            return compared.value
    return None


def _rename_rule(body: list[ast.stmt]) -> dict | None:
    """`kwargs["architectures"] = [arch if <test> else f"Eagle3{arch}" for arch in ...]`."""
    for stmt in body:
        for node in ast.walk(stmt):
            if not (isinstance(node, ast.ListComp) and isinstance(node.elt, ast.IfExp) and len(node.generators) == 1):
                continue
            var = node.generators[0].target
            if not isinstance(var, ast.Name):
                continue
            elt = node.elt
            for kept, renamed, keep_when_true in ((elt.body, elt.orelse, True), (elt.orelse, elt.body, False)):
                prefix = _prefixed(renamed, var.id)
                if isinstance(kept, ast.Name) and kept.id == var.id and prefix is not None:
                    test = name_test(elt.test, {var.id})
                    if test is None:
                        return {"keep_if": {"unknown": ast.unparse(elt.test)}, "prefix": prefix, "node": node}
                    return {"keep_if": test if keep_when_true else _negate(test), "prefix": prefix, "node": node}
    return None


def _negate(test: dict) -> dict:
    return test["not"] if set(test) == {"not"} else {"not": test}


def _prefixed(node: ast.AST, var: str) -> str | None:
    """f"Eagle3{arch}" or "Eagle3" + arch -> "Eagle3"."""
    if isinstance(node, ast.JoinedStr) and len(node.values) == 2:
        head, tail = node.values
        if isinstance(head, ast.Constant) and isinstance(tail, ast.FormattedValue) and getattr(tail.value, "id", None) == var:
            return str(head.value)  # an f-string's constant part is a str
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
        if getattr(node.right, "id", None) == var:
            return node.left.value
    return None


def eagle_architecture(fact: dict, method: str, architecture: str) -> str | None:
    """The name EAGLEConfig gives `architecture` for `method` (None when this release has no rule for it)."""
    rule = ((fact.get("eagle_config") or {}).get("methods") or {}).get(method)
    if rule is None or "unknown" in rule["keep_if"]:
        return None
    return architecture if name_matches(rule["keep_if"], architecture) else rule["prefix"] + architecture


# -- hf_config_override ---------------------------------------------------------------------------
def mtp_override(tree: EngineTree) -> dict | None:
    found = speculative_config_class(tree)
    if found is None:
        return None
    relpath, cls = found
    func = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "hf_config_override"), None)
    if func is None:
        return None
    config = func.args.args[0].arg if func.args.args else "hf_config"
    aliases = _architecture_aliases(func, config)
    rules = []
    for stmt in func.body:
        if isinstance(stmt, ast.If):
            rule = _override_rule(tree, relpath, func, stmt, config, aliases)
            if rule is not None:
                rules.append(rule)
    used_at = [tree.loc(relpath, n) for n in ast.walk(cls) if isinstance(n, ast.Attribute) and n.attr == "hf_config_override"]
    out: dict = {"function": f"{cls.name}.hf_config_override", "location": tree.loc(relpath, func), "used_at": used_at, "rules": rules}
    out["model_types"] = _replay_all(out, "model_type")
    out["architectures"] = _replay_all(out, "architecture")
    out["helper"] = helper_source(func)  # the whole function, run on a target config by compat.probes.name_eval
    return out


def _architecture_aliases(func: ast.FunctionDef | ast.AsyncFunctionDef, config: str) -> set[str]:
    """Locals holding `hf_config.architectures[0]` (initial_architecture, the walrus `arch`)."""
    names = set()
    for node in ast.walk(func):
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.NamedExpr):
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and value is not None and _is_first_architecture(value, config):
            names.add(target.id)
    return names


def _is_first_architecture(node: ast.AST, config: str) -> bool:
    return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "architectures"
            and getattr(node.value.value, "id", None) == config and isinstance(node.slice, ast.Constant) and node.slice.value == 0)


def _trigger(test: ast.AST, config: str, aliases: set[str]) -> tuple[dict | None, list[str]]:
    """(what the rule fires on, the other conjuncts as source text)."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    trigger, extra = None, []
    for part in parts:
        found = _field_test(part, config, aliases) if trigger is None else None
        if found is not None:
            trigger = found
        else:
            extra.append(ast.unparse(part))
    return trigger, extra


def _field_test(node: ast.AST, config: str, aliases: set[str]) -> dict | None:
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.In))):
        return None
    left = node.left.value if isinstance(node.left, ast.NamedExpr) else node.left
    if isinstance(left, ast.Attribute) and left.attr == "model_type" and getattr(left.value, "id", None) == config:
        field = "model_type"
    elif _is_first_architecture(left, config) or (isinstance(left, ast.Name) and left.id in aliases) or (
            isinstance(node.left, ast.NamedExpr) and node.left.target.id in aliases):
        field = "architecture"
    else:
        return None
    comp = node.comparators[0]
    if isinstance(node.ops[0], ast.Eq) and isinstance(comp, ast.Constant):
        return {"field": field, "values": [comp.value], "match": "equals"}
    if isinstance(comp, (ast.Tuple, ast.List, ast.Set)):
        return {"field": field, "values": [e.value for e in comp.elts if isinstance(e, ast.Constant)], "match": "equals"}
    if isinstance(comp, ast.Constant) and isinstance(comp.value, str):  # `in ("pangu_ultra_moe")`: a string, not a tuple
        return {"field": field, "values": [comp.value], "match": "substring_of"}
    return None


def _override_rule(tree, relpath, func, stmt: ast.If, config: str, aliases: set[str]) -> dict | None:
    trigger, extra = _trigger(stmt.test, config, aliases)
    if trigger is None:
        return None
    model_type, architectures, conditional = None, [], False
    parents = {c: p for p in ast.walk(stmt) for c in ast.iter_child_nodes(p)}
    for node in ast.walk(ast.Module(body=stmt.body, type_ignores=[])):
        nested = _nested(node, stmt, parents)
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr == "model_type" and getattr(target.value, "id", None) == config:
                    if isinstance(node.value, ast.Constant):
                        model_type = node.value.value
                if isinstance(target, ast.Attribute) and target.attr == "architectures" and getattr(target.value, "id", None) == config:
                    architectures += _architecture_values(node.value)
                    conditional = conditional or nested
                if (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) and target.slice.value == "architectures"):
                    architectures += _architecture_values(node.value)
                    conditional = conditional or nested
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Dict):
                for k, v in zip(arg.keys, arg.values):
                    if isinstance(k, ast.Constant) and k.value == "architectures":
                        architectures += _architecture_values(v)
                        conditional = conditional or nested
    returns = any(isinstance(s, ast.Return) for s in stmt.body)
    return {
        "trigger": trigger,
        "extra_condition": " and ".join(extra) or None,
        "sets_model_type": model_type,
        "sets_architectures": architectures or None,
        "architectures_conditional": conditional,
        "returns": returns,
        "location": tree.loc(relpath, stmt),
    }


def _nested(node: ast.AST, stmt: ast.If, parents: dict) -> bool:
    child = node
    while child in parents and parents[child] is not stmt:
        if isinstance(parents[child], ast.If):
            return True
        child = parents[child]
    return False


def _architecture_values(node: ast.AST) -> list[list]:  # of literals as written (strings in every release)
    """`["X"]` -> [["X"]]; `["A" if c else "B"]` -> [["A"], ["B"]]; `[m[arch]]` -> [["?"]]."""
    if not isinstance(node, (ast.List, ast.Tuple)) or len(node.elts) != 1:
        return [[ast.unparse(node)]]
    elt = node.elts[0]
    if isinstance(elt, ast.Constant):
        return [[elt.value]]
    if isinstance(elt, ast.IfExp) and isinstance(elt.body, ast.Constant) and isinstance(elt.orelse, ast.Constant):
        return [[elt.body.value], [elt.orelse.value]]
    return [[ast.unparse(elt)]]


def _fires(trigger: dict, value: str | None) -> bool:
    if value is None:
        return False
    if trigger["match"] == "substring_of":
        return any(value in v for v in trigger["values"])
    return value in trigger["values"]


def mtp_rewrite(fact: dict, model_type: str | None, architecture: str | None) -> dict | None:
    """Replay hf_config_override on a drafter config: None when nothing fires, else
    {"model_type", "architectures", "conditional", "locations"}."""
    override = fact.get("mtp_override") if "mtp_override" in fact else fact
    if not override:
        return None
    state = {"model_type": model_type, "architecture": architecture}
    first_arch = architecture
    fired, conditional, architectures = [], False, None
    for rule in override["rules"]:
        trig = rule["trigger"]
        value = first_arch if trig["field"] == "architecture" else state["model_type"]
        if not _fires(trig, value):
            continue
        fired.append(rule["location"])
        conditional = conditional or bool(rule["extra_condition"]) or rule["architectures_conditional"]
        if rule["sets_model_type"]:
            state["model_type"] = rule["sets_model_type"]
        if rule["sets_architectures"]:
            architectures = [a[0] for a in rule["sets_architectures"]]
            first_arch = architectures[0]
        if rule["returns"]:
            break
    if not fired:
        return None
    return {"model_type": state["model_type"], "architectures": architectures, "conditional": conditional, "locations": fired}


def _replay_all(override: dict, field: str) -> dict:
    out = {}
    for rule in override["rules"]:
        if rule["trigger"]["field"] != field or rule["trigger"]["match"] != "equals":
            continue
        for value in rule["trigger"]["values"]:
            if value in out:
                continue
            result = mtp_rewrite(override, value if field == "model_type" else None, value if field == "architecture" else None)
            if result is not None and (result["model_type"] not in (value, None) or result["architectures"]):
                out[value] = {"model_type": result["model_type"], "architectures": result["architectures"],
                              "conditional": result["conditional"], "location": result["locations"][0]}
    return out
