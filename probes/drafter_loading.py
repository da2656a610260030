"""How an EAGLE-3 drafter class turns checkpoint tensors into parameters, read from its code.

Shared by the vLLM and SGLang `drafter_loader` probes (the drafter classes of both engines
are torch modules with the same shape: a `*ForCausalLM` holding `self.model = <inner>(...)`,
an `fc`, decoder layer(s), `lm_head`, and a `load_weights` loop). Everything is found by
shape, not by name:

- `modules`: the attributes `__init__` creates (`model.fc`, `model.layers`, `lm_head`, ...),
  each with the condition it is created under (`if self.norm_before_fc:`) as source text and,
  when the condition reads the drafter config, as config sources the doctor can evaluate;
- `steps`: what `load_weights` does to each name, in order, as data: skip, consume (d2t into
  `hot_token_id`), rename (`.replace`, `re.sub`, `legacy_name_map`, stacked q/k/v mappings,
  `WeightsMapper`), prefix (`"model." + name` always, or only when the bare name is not a
  parameter); conditional skips carry their condition;
- `unknown`: what happens to a name no parameter has: every `params_dict[...]` lookup in the
  loop is classified as guarded (skipped, or warned and skipped) or not (KeyError), separately
  for the stacked branch and the others; a loop that hands names to a loader class instead
  reports that class (the engine probe says what it does);
- `fc`: the input width rule (`sources` chains from drafter_values), and its bias;
- `layers`: how many decoder layers are built (from `num_hidden_layers` or fixed) and the
  `raise` that refuses other counts.

`drafter_replay.land(entry, name, config)` replays the steps on one checkpoint name against the
modules, so a doctor check (and the probes' `samples`) need no engine knowledge of their own.
Conditions are lists of clauses (all must hold), see probes/vllm/drafter_loader.py for the shape.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from compat.probes.drafter_replay import land, module_index, name_matches
from compat.probes.drafter_values import (
    ModuleCode, Scope, config_keys, config_reads, is_self_attr, methods, nodes_of, normalize, parents_of, resolve, sources,
)

STACKED_HINTS = ("stacked", "mapping")
WARN_CALLS = ("warning", "warn", "warning_once", "info")


SAMPLE_CONFIG = {"num_hidden_layers": 2}


@dataclass
class DrafterCode:
    code: ModuleCode
    cls: ast.ClassDef
    inner: ast.ClassDef | None  # the class of `self.<inner_attr>` (LlamaModel, Eagle3MLAModel, ...)
    inner_attr: str | None
    base: tuple[ModuleCode, ast.ClassDef] | None = None  # where super().load_weights goes, if it is called

    def scope(self, cls: ast.ClassDef, func: ast.FunctionDef) -> Scope:
        return Scope(self.code, func, cls)


def drafter_code(code: ModuleCode, class_name: str, base_finder=None) -> DrafterCode | None:
    name = code.resolve_class_name(class_name)
    cls = code.classes.get(name)
    if cls is None:
        return None
    inner, attr = _inner_model(code, cls)
    base = base_finder(code, cls) if base_finder and _calls_super_load(cls) else None
    return DrafterCode(code, cls, inner, attr, base)


def find_base(code: ModuleCode, cls: ast.ClassDef) -> tuple[ModuleCode, ast.ClassDef] | None:
    """The first base class that defines load_weights: imported (`from x.llama import LlamaForCausalLM`) or local."""
    for base in cls.bases:
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        origin = code.imported(name) if name else None
        if origin is not None:
            relpath = origin[0].replace(".", "/") + ".py"
            if code.tree.exists(relpath):
                other = ModuleCode(code.tree, relpath)
                found = other.classes.get(other.resolve_class_name(origin[1]))
                if found is not None and "load_weights" in methods(found):
                    return other, found
        local = code.classes.get(name) if name else None
        if local is not None and local is not cls and "load_weights" in methods(local):
            return code, local
    return None


def describe(code: ModuleCode, class_name: str, fallback_unknown: dict | None = None) -> dict:
    """Everything this module reads about one drafter class (the drafter_loader probes' entry)."""
    d = drafter_code(code, class_name, find_base)
    if d is None:
        return {"error": f"no class {class_name} in {code.relpath}", "location": code.relpath}
    module_map = modules(d)
    out = {
        "class": d.cls.name,
        "location": code.loc(d.cls),
        "inner_attr": d.inner_attr,
        "inner_class": d.inner.name if d.inner is not None else None,
        "modules": [{"path": path, **entry} for path, entry in module_map.items()],
        "steps": load_steps(d),
        "unknown": effective_unknown(d, fallback_unknown),
    }
    if d.base is not None:
        out["delegates_to"] = {"class": d.base[1].name, "location": d.base[0].loc(d.base[1])}
    out["model_prefix"] = next(({k: s[k] for k in ("mode", "unless", "location")} for s in out["steps"] if s["op"] == "prefix"), None)
    out["vocab_map"] = vocab_map(out)
    out["fc"] = fc_rule(d)
    out["layers"] = layers_rule(d, module_map)
    out["samples"] = samples(out)
    out["config_reads"] = [_required(r) for r in config_reads(code)]
    return out


def effective_unknown(d: DrafterCode, fallback: dict | None) -> dict | None:
    """Who decides about a name no parameter has: the drafter's own loop, the base class it hands
    names to (super().load_weights), its inner model's loop (vLLM's AutoWeightsLoader hands it the
    `model.*` names), or else the loader class (`fallback`, read by the engine probe)."""
    own = unknown_names(d, d.cls)
    if own is not None:
        return own
    if d.base is not None:
        base = unknown_names(DrafterCode(d.base[0], d.base[1], None, None), d.base[1], d.base[0])
        if base is not None:
            return base
    if d.inner is not None and "load_weights" in methods(d.inner):
        inner = unknown_names(d, d.inner)
        if inner is not None:
            return inner
    return fallback


def vocab_map(entry: dict) -> dict:
    """What load_weights does with d2t and t2d, and when the parameter d2t is renamed to exists."""
    out = {}
    for tensor in ("d2t", "t2d"):
        step = next((s for s in entry["steps"] if s["op"] in ("skip", "consume", "rename") and "when" not in s
                     and name_matches(s["match"], tensor)), None)
        if step is None:
            out[tensor] = {"fate": None}
            continue
        fact = {"fate": step["op"], "location": step["location"]}
        if step["op"] == "rename":
            fact["to"] = tensor.replace(step["from"], step["to"])
            param = module_index(entry).get(fact["to"], {})
            when = param.get("when")
            fact["parameter_when"] = when
            fact["only_when_vocab_differs"] = any(c.get("draft_vocab_differs") for c in when or [])
            fact["parameter_location"] = param.get("location")
        elif step["op"] == "consume":
            fact["into"] = step.get("into")
        out[tensor] = fact
    return out


def samples(entry: dict) -> dict:
    """What the release does with the names the layouts differ on (see land)."""
    return {
        "model_prefixed": land(entry, "model.norm.weight", SAMPLE_CONFIG)["fate"],
        "midlayer": land(entry, "midlayer.hidden_norm.weight", SAMPLE_CONFIG)["fate"],
        "layers_0": land(entry, "layers.0.hidden_norm.weight", SAMPLE_CONFIG)["fate"],
        "layers_1_of_2": land(entry, "layers.1.hidden_norm.weight", SAMPLE_CONFIG)["fate"],
    }


def _required(read: dict) -> dict:
    """A key read only as `config.key` (no getattr default, no hasattr guard) has no default in this
    module: it must be in the drafter config, unless PretrainedConfig itself defines it."""
    soft = {"getattr", "hasattr", "get", "in"}
    read["read_without_default"] = "attribute" in read["access"] and not soft & set(read["access"])
    return read


def _inner_model(code: ModuleCode, cls: ast.ClassDef) -> tuple[ast.ClassDef | None, str | None]:
    """`self.model = LlamaModel(...)`: the module class the drafter wraps (defined in the same file)."""
    init = methods(cls).get("__init__")
    for node in nodes_of(init) if init else []:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
            target = node.targets[0]
            inner = code.classes.get(code.resolve_class_name(node.value.func.id))
            if is_self_attr(target) and inner is not None and "__init__" in methods(inner):
                if any(_creates_fc(n) for n in ast.walk(methods(inner)["__init__"])):
                    return inner, target.attr
    return None, None


def _creates_fc(node: ast.AST) -> bool:
    return isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
        is_self_attr(t, "fc") for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))


def _calls_super_load(cls: ast.ClassDef) -> bool:
    load = methods(cls).get("load_weights")
    return load is not None and any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "load_weights"
        and isinstance(n.func.value, ast.Call) and getattr(n.func.value.func, "id", None) == "super"
        for n in ast.walk(load))


# -- conditions ----------------------------------------------------------------------------
def condition(d: DrafterCode, cls: ast.ClassDef, func: ast.FunctionDef, test: ast.AST, negate: bool = False) -> dict:
    """One clause of a condition: {"test": source text} plus, when the test is a drafter-config
    switch, {"config": sources, "truthy": bool} (it holds when the value the sources give has that
    truthiness), or {"draft_vocab_differs": bool} for `draft_vocab_size != target vocab`."""
    text = ast.unparse(test)
    out: dict = {"test": f"not ({text})" if negate else text}
    inner_test, truthy = test, not negate
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
        sides = [ast.unparse(test.left), ast.unparse(test.comparators[0])]
        if any("draft_vocab_size" in x for x in sides) and any("draft" not in x and "vocab" in x for x in sides):
            out["draft_vocab_differs"] = isinstance(test.ops[0], ast.NotEq) != negate
            return out
    if isinstance(inner_test, ast.UnaryOp) and isinstance(inner_test.op, ast.Not):
        inner_test, truthy = inner_test.operand, not truthy
    if isinstance(inner_test, (ast.Name, ast.Attribute)):
        value = _switch_value(d, cls, func, inner_test)
        found = [s for s in sources(value) if "key" in s or "default" in s]
        if any("key" in s for s in found):
            out["config"], out["truthy"] = found, truthy
    return out


def _switch_value(d: DrafterCode, cls, func, node: ast.AST):
    """A flag's value; `self.model.flag` is the inner model's `self.flag`."""
    if (isinstance(node, ast.Attribute) and d.inner is not None and d.inner_attr
            and isinstance(node.value, ast.Attribute) and is_self_attr(node.value, d.inner_attr)):
        init = methods(d.inner)["__init__"]
        return resolve(ast.Attribute(value=ast.Name("self", ast.Load()), attr=node.attr, ctx=ast.Load()),
                       d.scope(d.inner, init), 10 ** 9)
    return resolve(node, d.scope(cls, func), node.lineno)


def _branch_conditions(d: DrafterCode, cls, func, node: ast.AST, parents: dict) -> list[dict]:
    out, child = [], node
    while child in parents and child is not func:
        parent = parents[child]
        if isinstance(parent, ast.If) and child is not parent.test:
            out.append(condition(d, cls, func, parent.test, negate=child in parent.orelse))
        child = parent
    return list(reversed(out))


# -- modules ------------------------------------------------------------------------------------
def modules(d: DrafterCode) -> dict[str, dict]:
    """Attribute path -> {"kind", "when", "location", ...} for what the drafter's __init__ builds."""
    out: dict[str, dict] = {}
    _collect_modules(d, d.cls, "", out)
    if d.inner is not None and d.inner_attr:
        _collect_modules(d, d.inner, d.inner_attr + ".", out)
    return out


def _collect_modules(d: DrafterCode, cls: ast.ClassDef, prefix: str, out: dict) -> None:
    init = methods(cls).get("__init__")
    if init is None:
        return
    parents = parents_of(init)
    for node in nodes_of(init):
        targets, value = [], None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register_buffer"
              and node.args and isinstance(node.args[0], ast.Constant)):
            out[prefix + node.args[0].value] = _module_entry(d, cls, init, node, parents, "buffer")
            continue
        for target in targets:
            if not is_self_attr(target) or target.attr == (d.inner_attr if prefix == "" else None):
                continue
            kind = _module_kind(value)
            if kind is None:
                continue
            path = prefix + target.attr
            entry = _module_entry(d, cls, init, node, parents, kind)
            if kind == "alias":
                entry["alias_of"] = ast.unparse(value).removeprefix("self.")
            if kind == "list":
                entry["count"] = _list_count(d, cls, init, value)
            _merge_module(out, path, entry)
    for path in [p for p, e in out.items() if e["kind"] == "absent"]:
        del out[path]  # `self.x = None` alone (hot_token_id): not a module


def _merge_module(out: dict, path: str, entry: dict) -> None:
    """Several assignments of one attribute: `None` in one branch (absent_when), an alias of the
    embedding in another (tied_when: lm_head), complementary branches (always built)."""
    previous = out.get(path)
    if previous is None:
        out[path] = entry if entry["kind"] != "absent" else {"kind": "absent", "absent_when": entry.get("when", [])}
        return
    if entry["kind"] == "absent":
        previous["absent_when"] = entry.get("when", [])
        return
    if previous["kind"] == "absent":
        entry["absent_when"] = previous.get("absent_when")
        out[path] = entry
        return
    if previous["kind"] == "alias" and entry["kind"] != "alias":
        entry = {**entry, "tied_to": previous["alias_of"], "tied_when": previous.get("when")}
        out[path] = entry
        previous = entry
    elif entry["kind"] == "alias":
        previous.update(tied_to=entry["alias_of"], tied_when=entry.get("when"))
        return
    if previous is not entry and _complementary(previous.get("when"), entry.get("when")):
        previous.pop("when", None)  # built in both branches of an if/else: always there


def _complementary(a: list | None, b: list | None) -> bool:
    """Two conditions that cover every case: one is empty, or they are one test and its negation."""
    if not a or not b:
        return True
    if len(a) != len(b) or a[:-1] != b[:-1]:
        return False
    x, y = a[-1]["test"], b[-1]["test"]
    return x == f"not ({y})" or y == f"not ({x})"


def _module_entry(d, cls, init, node, parents, kind) -> dict:
    entry: dict = {"kind": kind, "location": d.code.loc(node)}
    conditions = _branch_conditions(d, cls, init, node, parents)
    if conditions:
        entry["when"] = conditions
    return entry


def _module_kind(value: ast.AST | None) -> str | None:
    if isinstance(value, ast.Constant) and value.value is None:
        return "absent"
    if (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Attribute) and is_self_attr(value.value)
            and not value.value.attr.endswith("config")):
        return "alias"  # self.lm_head = self.model.embed_tokens
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name == "Parameter":
        return "parameter"
    if name == "ModuleList":
        return "list"
    return "module" if name[:1].isupper() and name not in ("LogitsProcessor",) else None


def _list_count(d: DrafterCode, cls, init, value: ast.Call) -> list[dict]:
    """nn.ModuleList([... for i in range(config.num_hidden_layers)]) -> its length as sources."""
    arg = value.args[0] if value.args else None
    if isinstance(arg, ast.List):
        return [{"default": len(arg.elts)}]
    if isinstance(arg, ast.ListComp) and len(arg.generators) == 1:
        it = arg.generators[0].iter
        if isinstance(it, ast.Call) and getattr(it.func, "id", None) == "range" and len(it.args) == 1:
            return sources(resolve(it.args[0], d.scope(cls, init), value.lineno))
    return [{"unknown": ast.unparse(arg) if arg is not None else "ModuleList()"}]


# -- fc and layers ---------------------------------------------------------------------------------
def fc_rule(d: DrafterCode) -> dict | None:
    """The `fc` input width: per-aux width x aux count, each a sources chain; and its bias."""
    holder = d.inner if d.inner is not None else d.cls
    init = methods(holder).get("__init__")
    assigns = [n for n in nodes_of(init) if _creates_fc(n)] if init else []
    calls = [a for a in assigns if isinstance(a.value, ast.Call)]
    if not calls:
        return None
    scope = d.scope(holder, init)
    widths = []
    for assign in calls:
        call = assign.value
        width = next((k.value for k in call.keywords if k.arg in ("input_size", "in_features")), call.args[0] if call.args else None)
        widths.append(resolve(width, scope, assign.lineno))
    # two constructions under if/else (`if hasattr(config, "target_hidden_size")`): the first wins when present
    value = normalize(widths[0] if len(widths) == 1 else ("first", tuple(widths)))
    out: dict = {"location": d.code.loc(calls[0]), "input_width": ast.unparse(
        next((k.value for k in calls[0].value.keywords if k.arg in ("input_size", "in_features")),
             calls[0].value.args[0] if calls[0].value.args else calls[0].value))}
    out.update(_split_width(value))
    out["bias"] = _bias(calls[0].value, scope, calls[0].lineno)
    conditions = _branch_conditions(d, holder, init, calls[0], parents_of(init))
    conditions = [c for c in conditions if not _is_hidden_size_test(c["test"])]
    if conditions:
        out["built_when"] = conditions
    return out


def _is_hidden_size_test(text: str) -> bool:
    return "hidden_size" in text


def _split_width(value) -> dict:
    factors = list(value[1]) if value is not None and value[0] == "mul" else [value]
    per_aux, count = [], []
    for factor in factors:
        keys = config_keys(factor)
        if keys and all(k.endswith("hidden_size") for k, _ in keys):
            per_aux.append(factor)
        else:
            count.append(factor)
    if len(per_aux) != 1 or len(count) > 1:
        return {"per_aux_width": None, "aux_count": None, "fixed_aux_count": None, "rule": sources(value)}
    aux = count[0] if count else ("const", 1)
    chain = sources(aux)
    fixed = chain[0]["default"] if len(chain) == 1 and "default" in chain[0] else None
    return {"per_aux_width": sources(per_aux[0]), "aux_count": chain, "fixed_aux_count": fixed}


def _bias(call: ast.Call, scope: Scope, line: int) -> list[dict]:
    kw = next((k.value for k in call.keywords if k.arg == "bias"), None)
    if kw is None:
        layer = ast.unparse(call.func)
        # torch.nn.Linear's bias defaults to True; other layer classes say so in their own code
        return [{"default": True}] if layer.endswith("nn.Linear") else [{"unknown": f"{layer} default"}]
    return sources(resolve(kw, scope, line))


def layers_rule(d: DrafterCode, module_map: dict[str, dict]) -> dict:
    """How many decoder layers are built, and the check that refuses other counts."""
    layer_paths = [p for p in module_map if p.rsplit(".", 1)[-1] in ("layers", "midlayer", "layer")]
    path = layer_paths[0] if layer_paths else None
    entry = module_map.get(path, {}) if path else {}
    count = entry.get("count") or ([{"default": 1}] if path else [{"unknown": "no decoder layer attribute"}])
    out: dict = {"attribute": path, "count": count, "location": entry.get("location")}
    rejects = _layer_count_check(d)
    out["rejects"] = rejects
    honours = any(s.get("key") == "num_hidden_layers" for s in count)
    out["honours_num_hidden_layers"] = honours
    out["multi_layer"] = honours and rejects is None
    return out


def _layer_count_check(d: DrafterCode) -> dict | None:
    for cls in (c for c in (d.cls, d.inner) if c is not None):
        init = methods(cls).get("__init__")
        for node in nodes_of(init) if init else []:
            if isinstance(node, ast.If) and "num_hidden_layers" in ast.unparse(node.test):
                raised = next((n for b in node.body for n in ast.walk(b) if isinstance(n, ast.Raise)), None)
                if raised is not None:
                    message = raised.exc.args[0] if isinstance(raised.exc, ast.Call) and raised.exc.args else None
                    return {"condition": ast.unparse(node.test),
                            "error": message.value if isinstance(message, ast.Constant) else ast.unparse(message) if message else None,
                            "location": d.code.loc(raised)}
    return None


# -- load_weights: steps ------------------------------------------------------------------------
def load_steps(d: DrafterCode) -> list[dict]:
    steps: list[dict] = []
    load = methods(d.cls).get("load_weights")
    if load is not None:
        steps += _loop_steps(d, d.cls, load, "drafter")
        steps += _loader_steps(d, d.cls, load, "drafter")
    if d.inner is not None and "load_weights" in methods(d.inner):
        inner_load = methods(d.inner)["load_weights"]
        steps += _loop_steps(d, d.inner, inner_load, "model")
        steps += _loader_steps(d, d.inner, inner_load, "model")
    if d.base is not None:
        base_code, base_cls = d.base
        base = DrafterCode(base_code, base_cls, None, None)
        base_load = methods(base_cls).get("load_weights")
        if base_load is not None:
            steps += _loop_steps(base, base_cls, base_load, "base")
    return steps


def _weights_loop(func: ast.FunctionDef) -> tuple[ast.For, str] | None:
    for node in nodes_of(func):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Tuple) and node.target.elts:
            first_target = node.target.elts[0]
            if isinstance(first_target, ast.Name) and "weight" in ast.unparse(node.iter):
                return node, first_target.id
    return None


def name_test(test: ast.AST, names: set[str]) -> dict | None:
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


def _name_vars(loop: ast.For, name: str) -> set[str]:
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


def _loop_steps(d: DrafterCode, cls, func, stage: str) -> list[dict]:
    found = _weights_loop(func)
    if found is None:
        return []
    loop, name = found
    names = _name_vars(loop, name)
    parents = parents_of(func)
    steps: list[tuple[int, dict]] = []
    for node in nodes_of(loop):
        step = (_skip_or_consume(d, node, names) or _rename(d, func, node, names, parents)
                or _prefix(d, node, names, parents))
        for s in step or []:
            s["stage"] = stage
            steps.append((getattr(node, "lineno", 0), s))
    for line, s in _dispatch_skip(d, loop, names):
        s["stage"] = stage
        steps.append((line, s))
    steps.sort(key=lambda x: x[0])
    out: list[dict] = []
    for _, step in steps:  # the same rule written in two branches (stacked and not) is one step
        same = {k: v for k, v in step.items() if k != "location"}
        if not any({k: v for k, v in o.items() if k != "location"} == same for o in out):
            out.append(step)
    return out


def _skip_or_consume(d: DrafterCode, node: ast.AST, names: set[str]) -> list[dict] | None:
    if not isinstance(node, ast.If) or not node.body or "params_dict" in ast.unparse(node.test):
        return None
    if any(_loads(s) for s in node.body):
        return None  # a branch that loads (fused q_a/kv_a projections), not a skip
    match = name_test(node.test, names)
    if match is None:
        return None
    stored = [t.attr for s in node.body for n in ast.walk(s) if isinstance(n, ast.Assign) for t in n.targets if is_self_attr(t)]
    if not any(isinstance(s, ast.Continue) for s in node.body) and not stored:
        return None
    copied = [n.func.value.attr for s in node.body for n in ast.walk(s)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "copy_"
              and is_self_attr(n.func.value)]
    into = (stored or copied or [None])[0]
    step = {"op": "consume", "match": match, "into": into} if into else {"op": "skip", "match": match}
    step["location"] = d.code.loc(node)
    return [step]


def _loads(stmt: ast.AST) -> bool:
    """The statement hands a tensor to a parameter loader (weight_loader(...), super().load_weights(...))."""
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call):
            callee = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            if "weight_loader" in callee or callee == "load_weights":
                return True
    return False


def _dispatch_skip(d: DrafterCode, loop: ast.For, names: set[str]) -> list[tuple[int, dict]]:
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
    if not branches:
        return []
    return [(last.end_lineno or last.lineno, {"op": "skip", "match": {"not": {"any": branches}}, "location": d.code.loc(last)})]


def _rename(d: DrafterCode, func, node: ast.AST, names: set[str], parents: dict) -> list[dict] | None:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    call = node.func
    if call.attr == "replace" and isinstance(call.value, ast.Name) and call.value.id in names and len(node.args) == 2:
        a, b = node.args
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


def _in_fusing_branch(node, parents, names) -> bool:
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


def _loop_pairs(func, node, a, b, parents) -> tuple[list[tuple[str, str]], bool]:
    """`for x, y in MAP.items()` / `for p, w, s in stacked_params_mapping`: the constant pairs replaced."""
    loop = node
    while loop in parents and not isinstance(loop, ast.For):
        loop = parents[loop]
    if not isinstance(loop, ast.For) or not isinstance(loop.target, ast.Tuple):
        return [], False
    targets = [getattr(t, "id", None) for t in loop.target.elts]
    if getattr(a, "id", None) not in targets or getattr(b, "id", None) not in targets:
        return [], False
    ia, ib = targets.index(a.id), targets.index(b.id)
    source_node = loop.iter.func.value if isinstance(loop.iter, ast.Call) and getattr(loop.iter.func, "attr", None) == "items" else loop.iter
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


def _local_literal(func: ast.FunctionDef, node: ast.AST) -> ast.AST | None:
    if isinstance(node, (ast.Dict, ast.List, ast.Tuple)):
        return node
    if isinstance(node, ast.Name):
        for sub in nodes_of(func):
            if isinstance(sub, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in sub.targets):
                return sub.value
    return None


def _prefix(d: DrafterCode, node: ast.AST, names: set[str], parents: dict) -> list[dict] | None:
    prefix = _prefix_literal(node, names)
    if prefix is None:
        return None
    mode, unless, child = "always", [], node
    while child in parents:
        parent = parents[child]
        if isinstance(parent, ast.IfExp) and "params_dict" in ast.unparse(parent.test):
            mode = "if_missing"  # `name if name in params_dict else f"model.{name}"`
            break
        if isinstance(parent, ast.If) and child is not parent.test:
            unless.extend(_negated_matches(parent.test, names, child in parent.orelse))
        if isinstance(parent, ast.For):
            break
        child = parent
    return [{"op": "prefix", "prefix": prefix, "mode": mode, "unless": unless, "location": d.code.loc(node)}]


def _prefix_literal(node: ast.AST, names: set[str]) -> str | None:
    """`"model." + name` or f"model.{name}" -> "model."."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.left, ast.Constant):
        if isinstance(node.right, ast.Name) and node.right.id in names and isinstance(node.left.value, str):
            return node.left.value
    if isinstance(node, ast.JoinedStr) and len(node.values) == 2:
        head, tail = node.values
        if (isinstance(head, ast.Constant) and isinstance(tail, ast.FormattedValue)
                and isinstance(tail.value, ast.Name) and tail.value.id in names):
            return head.value
    return None


def _negated_matches(test: ast.AST, names: set[str], in_orelse: bool) -> list[dict]:
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


def _loader_steps(d: DrafterCode, cls, func, stage: str) -> list[dict]:
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


def _with_when(step: dict, when: list | None) -> dict:
    if when:
        step["when"] = when
    return step


def _mapper_steps(d, cls, func, value: ast.AST, parents) -> list[dict]:
    if isinstance(value, ast.Call):
        return _weights_mapper(d, cls, func, value, parents)
    if is_self_attr(value):  # mapper=self.hf_to_vllm_mapper: a class attribute
        for stmt in cls.body:
            if isinstance(stmt, ast.Assign) and any(getattr(t, "id", None) == value.attr for t in stmt.targets):
                if isinstance(stmt.value, ast.Call):
                    return _weights_mapper(d, cls, func, stmt.value, parents)
    return []


def _weights_mapper(d, cls, func, call: ast.Call, parents) -> list[dict]:
    steps = []
    for kw in call.keywords:
        kind = {"orig_to_new_substr": "contains", "orig_to_new_prefix": "startswith",
                "orig_to_new_suffix": "endswith", "orig_to_new_stacked": "contains", "orig_to_new_regex": "regex"}.get(kw.arg)
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


def _collection(d, cls, func, node: ast.AST, parents):
    """Constant strings of a list literal or a local list built with `.append(c)` under conditions."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return [(e.value, e, None) for e in node.elts if isinstance(e, ast.Constant)]
    if not isinstance(node, ast.Name):
        return []
    out = []
    for sub in nodes_of(func):
        if isinstance(sub, ast.Assign) and any(getattr(t, "id", None) == node.id for t in sub.targets):
            if isinstance(sub.value, (ast.List, ast.Tuple)):
                out += [(e.value, e, None) for e in sub.value.elts if isinstance(e, ast.Constant)]
        if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "append"
                and getattr(sub.func.value, "id", None) == node.id and sub.args and isinstance(sub.args[0], ast.Constant)):
            out.append((sub.args[0].value, sub, _when(d, cls, func, sub, parents)))
    return out


def _mapping(d, cls, func, node: ast.AST, parents):
    """(key, value, node, when) of a dict literal, or a local dict filled with `m[k] = v` under conditions."""
    def value_of(v):
        if isinstance(v, ast.Constant):
            return v.value
        if isinstance(v, ast.Tuple) and v.elts and isinstance(v.elts[0], ast.Constant):
            return tuple(e.value if isinstance(e, ast.Constant) else None for e in v.elts)
        return "?"

    if isinstance(node, ast.Dict):
        return [(k.value, value_of(v), k, None) for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)]
    if not isinstance(node, ast.Name):
        return []
    out = []
    for sub in nodes_of(func):
        if isinstance(sub, ast.Assign):
            for t in sub.targets:
                if getattr(t, "id", None) == node.id and isinstance(sub.value, ast.Dict):
                    out += [(k.value, value_of(v), k, None) for k, v in zip(sub.value.keys, sub.value.values) if isinstance(k, ast.Constant)]
                if (isinstance(t, ast.Subscript) and getattr(t.value, "id", None) == node.id and isinstance(t.slice, ast.Constant)):
                    out.append((t.slice.value, value_of(sub.value), sub, _when(d, cls, func, sub, parents)))
    return out


def _when(d, cls, func, node, parents) -> list | None:
    conditions = _branch_conditions(d, cls, func, node, parents)
    if not conditions:
        return None
    flag = _checkpoint_flag(func, conditions[-1]["test"])
    if flag:
        conditions[-1]["unless_checkpoint_has"] = flag
    return conditions


def _checkpoint_flag(func: ast.FunctionDef, text: str) -> dict | None:
    """`not includes_draft_id_mapping`, set True inside `if "d2t" in name:`: the name test that sets it."""
    m = re.fullmatch(r"not \(?(\w+)\)?", text)
    if not m:
        return None
    parents = parents_of(func)
    for node in nodes_of(func):
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == m.group(1) for t in node.targets)
                and isinstance(node.value, ast.Constant) and node.value.value is True):
            child = node
            while child in parents:
                parent = parents[child]
                if isinstance(parent, ast.If):
                    found = name_test(parent.test, {n.id for n in ast.walk(parent.test) if isinstance(n, ast.Name)})
                    if found:
                        return found
                child = parent
    return None


# -- load_weights: names no parameter has -----------------------------------------------------------
def unknown_names(d: DrafterCode, cls: ast.ClassDef, code: ModuleCode | None = None) -> dict | None:
    """How `cls.load_weights`'s own loop treats a name missing from params_dict (None: no such loop)."""
    code = code or d.code
    func = methods(cls).get("load_weights")
    found = _weights_loop(func) if func is not None else None
    if found is None:
        return None
    loop, name = found
    names = _name_vars(loop, name)
    parents = parents_of(func)
    dicts = {t.id for n in nodes_of(func) if isinstance(n, ast.Assign) and "named_parameters" in ast.unparse(n.value)
             for t in n.targets if isinstance(t, ast.Name)}
    verdicts: dict[str, list[tuple[str, ast.AST]]] = {"stacked": [], "other": []}
    for node in nodes_of(loop):
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) in dicts:
            key = node.slice
            if not (isinstance(key, ast.Name) and key.id in names):
                continue
            branch = "stacked" if _in_stacked_loop(node, parents, loop) else "other"
            verdicts[branch].append((_guard(node, key.id, dicts, parents, loop), node))
    if not any(verdicts.values()):
        return None
    summary = {b: _worst([v for v, _ in vs]) for b, vs in verdicts.items() if vs}
    results = set(summary.values())
    result = results.pop() if len(results) == 1 else "mixed"
    first_node = next(n for vs in verdicts.values() for _, n in vs)
    out = {"result": result, **summary, "by": f"{cls.name}.load_weights", "location": code.loc(first_node)}
    return out


def _worst(verdicts: list[str]) -> str:
    for v in ("raise", "warn", "skip"):
        if v in verdicts:
            return v
    return "skip"


def _in_stacked_loop(node, parents, outer: ast.For) -> bool:
    child = node
    while child in parents and child is not outer:
        parent = parents[child]
        if isinstance(parent, ast.For) and child in parent.body and parent is not outer:
            if any(h in ast.unparse(parent.iter) for h in STACKED_HINTS):
                return True
        child = parent
    return False


def _membership(test: ast.AST, key: str, dicts: set[str]) -> str | None:
    """"in" / "not in" when `test` is exactly `key in params_dict` (or `.keys()`)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name) and test.left.id == key:
        comp = test.comparators[0]
        if isinstance(comp, ast.Call) and isinstance(comp.func, ast.Attribute) and comp.func.attr == "keys":
            comp = comp.func.value
        if isinstance(comp, ast.Name) and comp.id in dicts:
            return "in" if isinstance(test.ops[0], ast.In) else "not in" if isinstance(test.ops[0], ast.NotIn) else None
    return None


def _warns(stmts: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Call) and getattr(n.func, "attr", None) in WARN_CALLS for s in stmts for n in ast.walk(s))


def _guard(node, key: str, dicts: set[str], parents, loop) -> str:
    """"skip" / "warn" when the lookup cannot see a missing name, else "raise" (KeyError)."""
    child = node
    while child in parents and child is not loop:
        parent = parents[child]
        if isinstance(parent, ast.If):
            kind = _membership(parent.test, key, dicts)
            if kind == "in" and child in parent.body:
                return "warn" if _warns(parent.orelse) else "skip"
        if isinstance(parent, ast.IfExp) and _membership(parent.test, key, dicts) == "in" and child is parent.body:
            return "skip"
        body = _block_holding(parent, child)
        if body is not None:
            for stmt in body[:body.index(child)]:
                if isinstance(stmt, ast.If) and _membership(stmt.test, key, dicts) == "not in":
                    if any(isinstance(s, (ast.Continue, ast.Return, ast.Break)) for s in stmt.body):
                        return "warn" if _warns(stmt.body) else "skip"
        child = parent
    return "raise"


def _block_holding(parent: ast.AST, child: ast.AST) -> list | None:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and child in block:
            return block
    return None
