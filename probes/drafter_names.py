"""How a drafter's `load_weights` tests a checkpoint name, read as data (shared by drafter_steps and the engines'
probes): `name_test` turns a test into a match ({"contains": "d2t"}, {"any": [...]}, {"not": ...}, evaluated by
drafter_replay), `name_vars` finds the variables that hold the name (the loop's, `mapped_name`, `param_name`, ...),
`negated_matches` the names an `if` keeps out of its body.
"""

from __future__ import annotations

import ast
from typing import Any

from compat.probes.drafter_code import nodes_of


def name_test(test: ast.AST, names: set[str]) -> dict[str, Any] | None:
    """A name test as data: `"x" in name`, `name == "x"`, `name.endswith("x")`, `a or b`, `not a`, `a and b`."""
    if isinstance(test, ast.BoolOp):
        parts = [name_test(v, names) for v in test.values]
        return {"any" if isinstance(test.op, ast.Or) else "all": parts} if all(parts) else None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = name_test(test.operand, names)
        return {"not": inner} if inner else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotIn):
        inner = name_test(ast.Compare(test.left, [ast.In()], test.comparators), names)
        return {"not": inner} if inner else None
    if (isinstance(test, ast.Call) and getattr(test.func, "id", None) == "any" and len(test.args) == 1
            and isinstance(test.args[0], ast.GeneratorExp) and len(test.args[0].generators) == 1):
        return _any_of(test.args[0], names)  # any(key in name for key in ["embed_tokens", "lm_head"])
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Constant):
        comp = test.comparators[0]
        if isinstance(comp, ast.Name) and comp.id in names and isinstance(test.ops[0], ast.In):
            return {"contains": test.left.value}
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) and test.left.id in names:
        comp = test.comparators[0]
        if isinstance(comp, ast.Constant) and isinstance(test.ops[0], ast.Eq):
            return {"equals": comp.value}
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr in ("startswith", "endswith")
            and isinstance(test.func.value, ast.Name) and test.func.value.id in names and test.args
            and isinstance(test.args[0], ast.Constant)):
        return {test.func.attr: test.args[0].value}
    return None


def _any_of(gen: ast.GeneratorExp, names: set[str]) -> dict[str, Any] | None:
    comp = gen.generators[0]
    if not isinstance(comp.target, ast.Name) or not isinstance(comp.iter, (ast.List, ast.Tuple)) or comp.ifs:
        return None
    keys = [e.value for e in comp.iter.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if len(keys) != len(comp.iter.elts):
        return None
    parts, var = [], comp.target.id
    for key in keys:  # the element test with the loop variable replaced by each constant
        elt = _Substitute(var, key).visit(ast.parse(ast.unparse(gen.elt), mode="eval").body)
        part = name_test(elt, names)
        if part is None:
            return None
        parts.append(part)
    return {"any": parts}


class _Substitute(ast.NodeTransformer):
    def __init__(self, var: str, value: str) -> None:
        self.var, self.value = var, value

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Constant(self.value) if node.id == self.var else node


def name_vars(loop: ast.For, name: str) -> set[str]:
    """The loop's name variable and every variable derived from it (mapped_name, param_name, ...)."""
    names = {name}
    changed = True
    while changed:
        changed = False
        for node in nodes_of(loop):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                if node.targets[0].id not in names and any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node.value)):
                    names.add(node.targets[0].id)
                    changed = True
    return names


def negated_matches(test: ast.AST, names: set[str], in_orelse: bool) -> list[dict[str, Any]]:
    """The names an `if` keeps out of its body: `"lm_head" not in name`, `not name.startswith("lm_head.")`."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    out = []
    for part in parts:
        if in_orelse:
            match = name_test(part, names)
        elif isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not):
            match = name_test(part.operand, names)
        elif isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], ast.NotIn):
            match = name_test(ast.Compare(part.left, [ast.In()], part.comparators), names)
        else:
            match = None
        if match:
            out.append(match)
    return out
