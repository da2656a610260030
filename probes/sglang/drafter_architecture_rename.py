"""Which draft architectures SGLang's ModelConfig rewrites before the registry lookup.

SGLang has no EAGLE-3 architecture rename (a drafter's `architectures[0]` must itself be a
registered drafter class, see drafter_loader); the rewrites that exist turn a draft whose
architecture is a target's MTP-capable class into its NextN/MTP module, whatever the
algorithm. Read from `ModelConfig` (sglang/srt/configs/model_config.py; `__init__` up to
0.5.11, `_config_draft_model` from 0.5.12): every `if is_draft_model and
self.hf_config.architectures[0] == "X"` / `in [...]` / `in SOME_LIST` whose body assigns
`self.hf_config.architectures[0] = "Y"` (or `.architectures = [...]`).

    {"present": true, "function": "ModelConfig._config_draft_model", "location": "file:line",
     "eagle3_rename": null,
     "rules": [{"architectures": ["DeepseekV3ForCausalLM", ...], "to": ["DeepseekV3ForCausalLMNextN"],
                "extra_condition": "..."|null, "conditional": false, "location"}, ...],
     "architectures": {"DeepseekV3ForCausalLM": {"to": [...], "conditional": false, "location"}, ...}}

`conditional` is true when the rewrite also depends on something else (the algorithm, the
checkpoint); `to` then lists every name the code may write.
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes.drafter_code import ModuleCode
from compat.core.tree import EngineTree

MODEL_CONFIG_HOME = "sglang/srt/configs/model_config.py"


@probe("sglang", "drafter_architecture_rename", "Draft architecture rewrites (ModelConfig, NextN)", order=63)
def drafter_architecture_rename(tree: EngineTree) -> dict:
    found = _model_config(tree)
    if found is None:
        return {"present": False, "reason": "no class ModelConfig under sglang/srt/configs", "rules": [], "architectures": {}}
    code, cls = found
    relpath = code.relpath
    rules, function = [], None
    for func in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
        for node in ast.walk(func):
            if isinstance(node, ast.If):
                rule = _rule(code, node)
                if rule is not None:
                    rules.append(rule)
                    function = function or f"{cls.name}.{func.name}"
    rules.sort(key=lambda r: int(r["location"].rsplit(":", 1)[1]))
    architectures: dict[str, dict] = {}
    for rule in rules:
        for arch in rule["architectures"]:
            architectures.setdefault(arch, {"to": rule["to"], "conditional": rule["conditional"], "location": rule["location"]})
    return {
        "present": True,
        "function": function,
        "location": rules[0]["location"] if rules else tree.loc(relpath, cls),
        "eagle3_rename": None,
        "rules": rules,
        "architectures": architectures,
    }


def _model_config(tree: EngineTree) -> tuple[ModuleCode, ast.ClassDef] | None:
    """class ModelConfig: its usual home first, then any file of sglang/srt/configs that defines it."""
    homes = [MODEL_CONFIG_HOME] if tree.exists(MODEL_CONFIG_HOME) else []
    for relpath in homes + [f for f in tree.grep(b"class ModelConfig", "sglang/srt/configs") if f not in homes]:
        code = ModuleCode(tree, relpath)
        if "ModelConfig" in code.classes:
            return code, code.classes["ModelConfig"]
    return None


def _is_draft_flag(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "is_draft_model") or (
        isinstance(node, ast.Attribute) and node.attr == "is_draft_model")


def _first_architecture(node: ast.AST) -> bool:
    return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "architectures"
            and isinstance(node.slice, ast.Constant) and node.slice.value == 0)


def _rule(code: ModuleCode, node: ast.If) -> dict | None:
    parts = node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And) else [node.test]
    if not any(_is_draft_flag(p) for p in parts):
        return None
    archs, extra = None, []
    for part in parts:
        if _is_draft_flag(part):
            continue
        found = _architecture_test(code, part) if archs is None else None
        if found is not None:
            archs = found
        else:
            extra.append(ast.unparse(part))
    if archs is None:
        return None
    to, conditional = [], bool(extra)
    parents = {c: p for p in ast.walk(node) for c in ast.iter_child_nodes(p)}
    for sub in ast.walk(ast.Module(body=node.body, type_ignores=[])):
        if isinstance(sub, ast.Assign):
            for target in sub.targets:
                value = None
                if _first_architecture(target):
                    value = sub.value
                elif isinstance(target, ast.Attribute) and target.attr == "architectures" and isinstance(sub.value, ast.List) and sub.value.elts:
                    value = sub.value.elts[0]
                if value is not None:
                    to.append(value.value if isinstance(value, ast.Constant) else ast.unparse(value))
                    conditional = conditional or _nested(sub, node, parents)
    if not to:
        return None
    return {"architectures": archs, "to": list(dict.fromkeys(to)), "extra_condition": " and ".join(extra) or None,
            "conditional": conditional, "location": code.loc(node)}


def _nested(sub: ast.AST, rule: ast.If, parents: dict) -> bool:
    """The assignment sits under an `if` of its own inside the rule's body (DeepseekV4: DSpark or NextN)."""
    child = sub
    while child in parents and parents[child] is not rule:
        if isinstance(parents[child], ast.If):
            return True
        child = parents[child]
    return False


def _architecture_test(code: ModuleCode, node: ast.AST) -> list | None:  # of literals as written
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and _first_architecture(node.left)):
        return None
    comp = node.comparators[0]
    if isinstance(node.ops[0], ast.Eq) and isinstance(comp, ast.Constant):
        return [comp.value]
    if isinstance(node.ops[0], ast.In):
        listed = code.assigns.get(comp.id) if isinstance(comp, ast.Name) else comp  # MIMO_V2_MODEL_ARCHS = [...]
        if isinstance(listed, (ast.List, ast.Tuple, ast.Set)):
            return [e.value for e in listed.elts if isinstance(e, ast.Constant)]
    return None
