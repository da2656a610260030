"""What a drafter's `load_weights` does to each checkpoint name, in order, as data (`load_steps`).

Each step is {"op": "skip" | "consume" | "rename" | "prefix", "match"?, ..., "stage", "location"}: skip
(`continue` on a name test), consume (d2t into `hot_token_id`), rename (`.replace`, `re.sub`, a mapping
looped over, stacked q/k/v mappings, `WeightsMapper`, `legacy_name_map`), prefix (`"model." + name`
always, or only when the bare name is not a parameter); options handed to a loader after the loop
(`skip_prefixes`, `skip_substrs`, `mapper=`) are steps of stage "loader". A step taken only under a
condition carries it as `when`. `name_test` (drafter_names) reads a name test as a match ({"contains": "d2t"},
{"any": [...]}, {"not": ...}); drafter_replay evaluates matches.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from compat.probes.drafter_class import DrafterCode, branch_conditions, condition
from compat.probes.drafter_code import Function, Parents, is_self_attr, load_function, methods, nodes_of, parents_of
from compat.probes.drafter_helpers import helper_steps
from compat.probes.drafter_names import name_test, name_vars, negated_matches


MAPPER_KINDS: dict[str | None, str] = {  # WeightsMapper's keyword -> how its keys match a name
    "orig_to_new_substr": "contains", "orig_to_new_prefix": "startswith", "orig_to_new_suffix": "endswith",
    "orig_to_new_stacked": "contains", "orig_to_new_regex": "regex"}
Step = dict[str, Any]  # {"op", "match"?, ..., "stage", "location"}
When = list[dict[str, Any]]  # a condition: clauses that all hold


STACKED_HINTS = ("stacked", "mapping")


# -- load_weights: steps -----------------------------------------------------------------------

def load_steps(d: DrafterCode) -> list[Step]:
    steps: list[dict] = []
    load = load_function(d.cls)
    if load is not None:
        steps += _loop_steps(d, d.cls, load, "drafter")
        steps += _loader_steps(d, d.cls, load, "drafter")
    inner_load = load_function(d.inner) if d.inner is not None else None
    if d.inner is not None and inner_load is not None:
        steps += _loop_steps(d, d.inner, inner_load, "model")
        steps += _loader_steps(d, d.inner, inner_load, "model")
    if d.base is not None:
        base_code, base_cls = d.base
        base = DrafterCode(base_code, base_cls, None, None)
        base_load = load_function(base_cls)
        if base_load is not None:
            steps += _loop_steps(base, base_cls, base_load, "base")
    return steps


def weights_loop(func: Function) -> tuple[ast.For, str] | None:
    for node in nodes_of(func):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Tuple) and node.target.elts:
            first_target = node.target.elts[0]
            if isinstance(first_target, ast.Name) and "weight" in ast.unparse(node.iter):
                return node, first_target.id
    return _mapped(func)


def _mapped(func: Function) -> tuple[ast.For, str] | None:
    """`def transform(inputs): name, w = inputs; ...` applied as `map(transform, weights)`: its body is the loop's
    (an ast.For made of it, kept on the function: the readers walk it like a loop)."""
    cached = getattr(func, "_compat_mapped", None)
    if cached is not None:
        return cached or None
    found: tuple[ast.For, str] | None = None
    mapped = {n.args[0].id for n in nodes_of(func) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "map"
              and len(n.args) == 2 and isinstance(n.args[0], ast.Name) and "weight" in ast.unparse(n.args[1])}
    for node in nodes_of(func):
        if isinstance(node, ast.FunctionDef) and node.name in mapped and len(node.body) > 1 and node.args.args:
            first = node.body[0]
            if (isinstance(first, ast.Assign) and isinstance(first.targets[0], ast.Tuple) and first.targets[0].elts
                    and isinstance(first.targets[0].elts[0], ast.Name)
                    and getattr(first.value, "id", None) == node.args.args[0].arg):
                loop = ast.For(target=first.targets[0], iter=ast.Name("weights", ast.Load()), body=node.body[1:], orelse=[])
                ast.copy_location(loop, node)
                loop.end_lineno = node.end_lineno
                found = (loop, first.targets[0].elts[0].id)
                break
    setattr(func, "_compat_mapped", found or ())
    return found


def _loop_steps(d: DrafterCode, cls: ast.ClassDef, func: Function, stage: str) -> list[Step]:
    found = weights_loop(func)
    if found is None:
        return []
    loop, name = found
    names = name_vars(loop, name)
    parents = parents_of(func)
    steps: list[tuple[int, dict]] = []
    for node in nodes_of(loop):
        step = (_skip_or_consume(d, node, names, cls, func) or _rename(d, func, node, names, parents)
                or _whole_name(d, node, names, parents) or _prefix(d, node, names, parents))
        for s in step or []:
            s["stage"] = stage
            steps.append((getattr(node, "lineno", 0), s))
    for line, s in _dispatch_skip(d, loop, names) + helper_steps(d, cls, loop, names, name_test):
        s["stage"] = stage
        steps.append((line, s))
    steps.sort(key=lambda x: x[0])
    out: list[dict] = []
    for _, one in steps:  # the same rule written in two branches (stacked and not) is one step
        same = {k: v for k, v in one.items() if k != "location"}
        if not any({k: v for k, v in o.items() if k != "location"} == same for o in out):
            out.append(one)
    return out


def _skip_or_consume(d: DrafterCode, node: ast.AST, names: set[str], cls: ast.ClassDef, func: Function) -> list[Step] | None:
    if not isinstance(node, ast.If) or not node.body or "params_dict" in ast.unparse(node.test):
        return None
    continues = any(isinstance(s, ast.Continue) for s in node.body)
    loaded_into = [a for s in node.body for a in _loaded_attrs(s)]  # LMDeploy: `load_weight(self.draft_id_to_target_id, ...)`
    if any(_loads(s) for s in node.body) and not (loaded_into and continues):
        return None  # a branch that loads (fused q_a/kv_a projections), not a skip
    match, when = name_test(node.test, names), None
    if match is None:  # `self.config.tie_word_embeddings and "lm_head.weight" in name`: a name test under a condition
        match, when = _name_test_when(d, cls, func, node.test, names)
    if match is None:
        return None
    assigns = [n for s in node.body for n in ast.walk(s) if isinstance(n, ast.Assign)]
    stored = [t.attr for n in assigns for t in n.targets if is_self_attr(t)]
    if not continues and all(isinstance(n.value, ast.Constant) for n in assigns if any(is_self_attr(t) for t in n.targets)):
        return None  # `self.include_embed_tokens = True`, then loaded as any name: a flag, not a consumption
    copied = [n.func.value.attr for s in node.body for n in ast.walk(s)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "copy_"
              and is_self_attr(n.func.value)]
    into = stored[0] if stored else copied[0] if copied else loaded_into[0] if loaded_into else None
    step = {"op": "consume", "match": match, "into": into} if into else {"op": "skip", "match": match}
    step["location"] = d.code.loc(node)
    return [_with_when(step, when)]


def _name_test_when(d: DrafterCode, cls: ast.ClassDef, func: Function, test: ast.AST,
                    names: set[str]) -> tuple[dict[str, Any] | None, When | None]:
    """`a and b` whose name tests give the match and whose other parts (config switches) the condition."""
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
        return None, None
    matches = [m for m in (name_test(v, names) for v in test.values) if m]
    others = [v for v in test.values if name_test(v, names) is None]
    if not matches or any(isinstance(n, ast.Name) and n.id in names for v in others for n in ast.walk(v)):
        return None, None
    return (matches[0] if len(matches) == 1 else {"all": matches}), [condition(d, cls, func, v) for v in others]


def _loads(stmt: ast.AST) -> bool:
    """The statement hands a tensor to a parameter loader (weight_loader(...), super().load_weights(...), LMDeploy's
    load_weight(param, tensor))."""
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call):
            callee = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            if "weight_loader" in callee or callee in ("load_weights", "load_weight"):
                return True
    return False


def _loaded_attrs(stmt: ast.AST) -> list[str]:
    """`load_weight(self.x, tensor)`: the attributes a statement loads a tensor straight into."""
    return [n.args[0].attr for n in ast.walk(stmt) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "load_weight"
            and n.args and is_self_attr(n.args[0])]


def _dispatch_skip(d: DrafterCode, loop: ast.For, names: set[str]) -> list[tuple[int, Step]]:
    """`if <a>: load(...) elif <b>: load(...)` with no else, ending the loop: other names are dropped."""
    last = loop.body[-1] if loop.body else None
    branches, node = [], last
    while isinstance(node, ast.If):
        if not any(_loads(s) for s in node.body):
            return []
        match = name_test(node.test, names)
        if match is None:
            return []
        branches.append(match)
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
        elif node.orelse:
            return []
        else:
            break
    if not branches or last is None:
        return []
    return [(last.end_lineno or last.lineno, {"op": "skip", "match": {"not": {"any": branches}}, "location": d.code.loc(last)})]


def _rename(d: DrafterCode, func: Function, node: ast.AST, names: set[str], parents: Parents) -> list[Step] | None:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    call = node.func
    if call.attr in ("removeprefix", "removesuffix") and isinstance(call.value, ast.Name) and call.value.id in names \
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        part = node.args[0].value  # `checkpoint_name.removeprefix('model.')`: a rename to nothing, at that end only
        at_end = "^" + re.escape(part) if call.attr == "removeprefix" else re.escape(part) + "$"
        kind = "startswith" if call.attr == "removeprefix" else "endswith"
        return [{"op": "rename", "match": {kind: part}, "from": at_end, "to": "", "regex": True, "location": d.code.loc(node)}]
    if call.attr == "replace" and isinstance(call.value, ast.Name) and call.value.id in names and len(node.args) in (2, 3):
        a, b = node.args[:2]  # a third argument is the count: `name.replace('layers.0.', 'midlayer.', 1)`
        if isinstance(a, ast.Constant) and isinstance(b, ast.Constant):
            step = {"op": "rename", "match": {"contains": a.value}, "from": a.value, "to": b.value, "location": d.code.loc(node)}
            if _in_fusing_branch(node, parents, names):
                step["stacked"] = True  # q_a_proj + kv_a_proj_with_mqa -> fused_qkv_a_proj_with_mqa: shard names
            return [step]
        pairs, stacked = _loop_pairs(func, node, a, b, parents)
        return [{"op": "rename", "match": {"contains": f}, "from": f, "to": t, "location": d.code.loc(node),
                 **({"stacked": True} if stacked else {})} for f, t in pairs] or None
    if call.attr == "sub" and getattr(call.value, "id", None) == "re" and len(node.args) >= 3:
        pattern, repl = node.args[0], node.args[1]
        if isinstance(pattern, ast.Constant) and isinstance(repl, ast.Constant):
            return [{"op": "rename", "match": {"regex": pattern.value}, "from": pattern.value, "to": repl.value,
                     "regex": True, "location": d.code.loc(node)}]
    return None


def _in_fusing_branch(node: ast.AST, parents: Parents, names: set[str]) -> bool:
    """Inside `if "q_a_proj" in name ...:` whose body loads a tensor built from several names."""
    child = node
    while child in parents:
        parent = parents[child]
        if isinstance(parent, ast.For):
            return False
        if isinstance(parent, ast.If) and child is not parent.test and name_test(parent.test, names) is not None:
            if any(_loads(s) for s in parent.body):
                return True
        child = parent
    return False


def _loop_pairs(func: Function, node: ast.AST, a: ast.expr, b: ast.expr,
                parents: Parents) -> tuple[list[tuple[str, str]], bool]:
    """`for x, y in MAP.items()` / `for p, w, s in stacked_params_mapping`: the constant pairs replaced."""
    loop = node
    while loop in parents and not isinstance(loop, ast.For):
        loop = parents[loop]
    if not isinstance(loop, ast.For) or not isinstance(loop.target, ast.Tuple):
        return [], False
    targets = [getattr(t, "id", None) for t in loop.target.elts]
    a_id, b_id = getattr(a, "id", None), getattr(b, "id", None)
    if a_id not in targets or b_id not in targets:
        return [], False
    ia, ib = targets.index(a_id), targets.index(b_id)
    it = loop.iter
    source_node = it.func.value if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items" else it
    literal = _local_literal(func, source_node)
    rows: list = []
    if isinstance(literal, ast.Dict):
        rows = [(k, v) for k, v in zip(literal.keys, literal.values)]
    elif isinstance(literal, (ast.List, ast.Tuple)):
        rows = [tuple(e.elts) for e in literal.elts if isinstance(e, (ast.Tuple, ast.List))]
    pairs = []
    for row in rows:
        if max(ia, ib) < len(row) and all(isinstance(row[i], ast.Constant) for i in (ia, ib)):
            pairs.append((row[ia].value, row[ib].value))
    name = ast.unparse(source_node)
    return pairs, len(targets) == 3 or any(h in name for h in STACKED_HINTS)


def _local_literal(func: Function, node: ast.AST) -> ast.AST | None:
    if isinstance(node, (ast.Dict, ast.List, ast.Tuple)):
        return node
    if isinstance(node, ast.Name):
        for sub in nodes_of(func):
            if isinstance(sub, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in sub.targets):
                return sub.value
    return None


def _whole_name(d: DrafterCode, node: ast.AST, names: set[str], parents: Parents) -> list[Step] | None:
    """`if 'd2t' in name: name = 'draft_id_to_target_id'`: the whole name replaced by a constant, under a name test."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in names and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
        return None
    parent = parents.get(node)
    match = name_test(parent.test, names) if isinstance(parent, ast.If) and node in parent.body else None
    if match is None:
        return None
    return [{"op": "rename", "match": match, "from": "^.*$", "to": node.value.value, "regex": True, "location": d.code.loc(node)}]


def _prefix(d: DrafterCode, node: ast.AST, names: set[str], parents: Parents) -> list[Step] | None:
    prefix = _prefix_literal(node, names)
    if prefix is None or _in_raise(node, parents):
        return None
    mode, unless, child = "always", [], node
    while child in parents:
        parent = parents[child]
        if isinstance(parent, ast.IfExp) and "params_dict" in ast.unparse(parent.test):
            mode = "if_missing"  # `name if name in params_dict else f"model.{name}"`
            break
        if isinstance(parent, ast.If) and child is not parent.test:
            unless.extend(negated_matches(parent.test, names, child in parent.orelse))
        if isinstance(parent, ast.For):
            break
        child = parent
    return [{"op": "prefix", "prefix": prefix, "mode": mode, "unless": unless, "location": d.code.loc(node)}]


def _in_raise(node: ast.AST, parents: Parents) -> bool:
    """Inside an exception's message (`raise ValueError(f'unsupported tensor {name}')`), not a name being built."""
    while node in parents and not isinstance(node, ast.For):
        node = parents[node]
        if isinstance(node, ast.Raise):
            return True
    return False


def _prefix_literal(node: ast.AST, names: set[str]) -> str | None:
    """`"model." + name` or f"model.{name}" -> "model."."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.left, ast.Constant):
        if isinstance(node.right, ast.Name) and node.right.id in names and isinstance(node.left.value, str):
            return node.left.value
    if isinstance(node, ast.JoinedStr) and len(node.values) == 2:
        head, tail = node.values
        if (isinstance(head, ast.Constant) and isinstance(head.value, str) and isinstance(tail, ast.FormattedValue)
                and isinstance(tail.value, ast.Name) and tail.value.id in names):
            return head.value
    return None


def _loader_steps(d: DrafterCode, cls: ast.ClassDef, func: Function, stage: str) -> list[Step]:
    """Options handed to a loader after the loop: skip_substrs / skip_prefixes, WeightsMapper(...)."""
    steps: list[dict] = []
    parents = parents_of(func)
    calls = [n for n in nodes_of(func) if isinstance(n, ast.Call)]
    passed = {id(k.value) for c in calls for k in c.keywords}  # WeightsMapper(...) given as mapper= is read there
    for call in calls:
        callee = ast.unparse(call.func)
        for kw in call.keywords:
            if kw.arg in ("skip_substrs", "skip_prefixes"):
                kind = "contains" if kw.arg == "skip_substrs" else "startswith"
                for value, node, when in _collection(d, cls, func, kw.value, parents):
                    steps.append(_with_when({"op": "skip", "match": {kind: value}, "location": d.code.loc(node)}, when))
            elif kw.arg == "mapper":
                steps += _mapper_steps(d, cls, func, kw.value, parents)
        if callee.endswith("WeightsMapper") and id(call) not in passed:
            steps += _weights_mapper(d, cls, func, call, parents)
    for step in steps:
        step["stage"] = "loader" if stage == "drafter" else stage
    return steps


def _with_when(step: Step, when: When | None) -> Step:
    if when:
        step["when"] = when
    return step


def _mapper_steps(d: DrafterCode, cls: ast.ClassDef, func: Function, value: ast.AST, parents: Parents) -> list[Step]:
    if isinstance(value, ast.Call):
        return _weights_mapper(d, cls, func, value, parents)
    if is_self_attr(value):  # mapper=self.hf_to_vllm_mapper: a class attribute
        for stmt in cls.body:
            if isinstance(stmt, ast.Assign) and any(getattr(t, "id", None) == value.attr for t in stmt.targets):
                if isinstance(stmt.value, ast.Call):
                    return _weights_mapper(d, cls, func, stmt.value, parents)
    return []


def _weights_mapper(d: DrafterCode, cls: ast.ClassDef, func: Function, call: ast.Call, parents: Parents) -> list[Step]:
    steps = []
    for kw in call.keywords:
        kind = MAPPER_KINDS.get(kw.arg)
        if kind is None:
            continue
        for key, value, node, when in _mapping(d, cls, func, kw.value, parents):
            if value is None:
                steps.append(_with_when({"op": "skip", "match": {kind: key}, "location": d.code.loc(node)}, when))
                continue
            to = value[0] if isinstance(value, tuple) else value
            step = {"op": "rename", "match": {kind: key}, "from": key, "to": to, "location": d.code.loc(node)}
            if kw.arg == "orig_to_new_stacked":
                step["stacked"] = True
            if kind == "regex":
                step["regex"] = True
            steps.append(_with_when(step, when))
    return steps


def _collection(d: DrafterCode, cls: ast.ClassDef, func: Function, node: ast.AST,
                parents: Parents) -> list[tuple[Any, ast.AST, When | None]]:
    """Constant strings of a list literal or a local list built with `.append(c)` under conditions."""
    out: list[tuple[Any, ast.AST, When | None]] = []
    if isinstance(node, (ast.List, ast.Tuple)):
        out += [(e.value, e, None) for e in node.elts if isinstance(e, ast.Constant)]
        return out
    if not isinstance(node, ast.Name):
        return []
    for sub in nodes_of(func):
        if isinstance(sub, ast.Assign) and any(getattr(t, "id", None) == node.id for t in sub.targets):
            if isinstance(sub.value, (ast.List, ast.Tuple)):
                out += [(e.value, e, None) for e in sub.value.elts if isinstance(e, ast.Constant)]
        if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "append"
                and getattr(sub.func.value, "id", None) == node.id and sub.args and isinstance(sub.args[0], ast.Constant)):
            out.append((sub.args[0].value, sub, _when(d, cls, func, sub, parents)))
    return out


def _mapping(d: DrafterCode, cls: ast.ClassDef, func: Function, node: ast.AST,
             parents: Parents) -> list[tuple[Any, Any, ast.AST, When | None]]:
    """(key, value, node, when) of a dict literal, or a local dict filled with `m[k] = v` under conditions."""
    def value_of(v: ast.AST) -> Any:
        if isinstance(v, ast.Constant):
            return v.value
        if isinstance(v, ast.Tuple) and v.elts and isinstance(v.elts[0], ast.Constant):
            return tuple(e.value if isinstance(e, ast.Constant) else None for e in v.elts)
        return "?"

    out: list[tuple[Any, Any, ast.AST, When | None]] = []
    if isinstance(node, ast.Dict):
        out += [(k.value, value_of(v), k, None) for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)]
        return out
    if not isinstance(node, ast.Name):
        return []
    for sub in nodes_of(func):
        if isinstance(sub, ast.Assign):
            for t in sub.targets:
                if getattr(t, "id", None) == node.id and isinstance(sub.value, ast.Dict):
                    out += [(k.value, value_of(v), k, None) for k, v in zip(sub.value.keys, sub.value.values) if isinstance(k, ast.Constant)]
                if (isinstance(t, ast.Subscript) and getattr(t.value, "id", None) == node.id and isinstance(t.slice, ast.Constant)):
                    out.append((t.slice.value, value_of(sub.value), sub, _when(d, cls, func, sub, parents)))
    return out


def _when(d: DrafterCode, cls: ast.ClassDef, func: Function, node: ast.AST, parents: Parents) -> When | None:
    conditions = branch_conditions(d, cls, func, node, parents)
    if not conditions:
        return None
    flag = _checkpoint_flag(func, conditions[-1]["test"])
    if flag:
        conditions[-1]["unless_checkpoint_has"] = flag
    return conditions


def _checkpoint_flag(func: Function, text: str) -> dict[str, Any] | None:
    """`not includes_draft_id_mapping`, set True inside `if "d2t" in name:`: the name test that sets it."""
    m = re.fullmatch(r"not \(?(\w+)\)?", text)
    if not m:
        return None
    parents = parents_of(func)
    for node in nodes_of(func):
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == m.group(1) for t in node.targets)
                and isinstance(node.value, ast.Constant) and node.value.value is True):
            child: ast.AST = node
            while child in parents:
                parent = parents[child]
                if isinstance(parent, ast.If):
                    found = name_test(parent.test, {n.id for n in ast.walk(parent.test) if isinstance(n, ast.Name)})
                    if found:
                        return found
                child = parent
    return None
