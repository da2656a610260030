"""What a drafter class's `__init__` builds, read from its code: its modules, its `fc`, its decoder layers.

- `modules`: the attributes `__init__` creates (`model.fc`, `model.layers`, `lm_head`, ...), each with
  the condition it is created under (`if self.norm_before_fc:`), and `absent_when` / `tied_to` when
  another branch sets it to None or to the embedding;
- `fc_rule`: the input width (per-aux width x aux count, each a sources chain from drafter_values) and
  its bias;
- `layers_rule`: how many decoder layers are built (from `num_hidden_layers` or fixed) and the `raise`
  that refuses other counts.
"""

from __future__ import annotations

import ast
from typing import Any

from compat.probes.drafter_class import DrafterCode, base_class, branch_conditions, creates_fc
from compat.probes.drafter_code import Function, Parents, class_attribute, is_self_attr, methods, nodes_of, parents_of
from compat.probes.drafter_values import Scope, Value, config_keys, normalize, resolve, sources


# -- modules -----------------------------------------------------------------------------------

def modules(d: DrafterCode) -> dict[str, dict]:
    """Attribute path -> {"kind", "when", "location", ...} for what the drafter's __init__ builds."""
    out: dict[str, dict] = {}
    _collect_modules(d, d.cls, "", out)
    if d.inner is not None and d.inner_attr:
        _collect_modules(d, d.inner, d.inner_attr + ".", out)
    return out


def _collect_modules(d: DrafterCode, cls: ast.ClassDef, prefix: str, out: dict, depth: int = 0) -> None:
    init = methods(cls).get("__init__")
    if (init is None or _calls_super_init(init)) and depth < 4:  # what the base builds first, then this class
        found = base_class(d.code, cls)
        if found is not None:
            _collect_modules(DrafterCode(found[0], found[1], None, d.inner_attr), found[1], prefix, out, depth + 1)
    if init is None:
        return
    parents = parents_of(init)
    for node in nodes_of(init):
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register_buffer"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out[prefix + node.args[0].value] = _module_entry(d, cls, init, node, parents, "buffer")
            continue
        if len(targets) == 1 and isinstance(targets[0], ast.Tuple) and isinstance(value, ast.Call):
            stack = _layer_stack(d, cls, init, targets[0], value)  # self.start_layer, self.end_layer, self.layers = make_layers(n, ...)
            if stack is not None:
                out[prefix + stack[0]] = {**_module_entry(d, cls, init, node, parents, "list"), **stack[1]}
            continue
        for target in targets:
            if not is_self_attr(target) or target.attr == (d.inner_attr if prefix == "" else None):
                continue
            kind = _module_kind(value, cls)
            if kind is None:
                continue
            path = prefix + target.attr
            entry = _module_entry(d, cls, init, node, parents, kind)
            if kind == "alias" and value is not None:
                entry["alias_of"] = _alias_of(value)
            if kind == "list" and isinstance(value, ast.Call):
                entry["count"] = _list_count(d, cls, init, value)
            if kind == "dict" and isinstance(value, ast.Call):
                entry.update(_dict_keys(d, cls, init, value))
            if kind in ("module", "list", "dict", "parameter") and isinstance(value, ast.Call):
                entry["builds"] = _builds(value, cls)
            _merge_module(out, path, entry)
    for path in [p for p, e in out.items() if e["kind"] == "absent"]:
        del out[path]  # `self.x = None` alone (hot_token_id): not a module


def _layer_stack(d: DrafterCode, cls: ast.ClassDef, init: Function, target: ast.Tuple,
                 value: ast.Call) -> tuple[str, dict[str, Any]] | None:
    """`..., self.layers = make_layers(config.num_hidden_layers, ...)`: the decoder stack, its count the first argument."""
    callee = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
    stack = next((t for t in target.elts if is_self_attr(t) and t.attr.endswith("layers")), None)
    if "layers" not in callee or stack is None or not value.args:
        return None
    assert isinstance(stack, ast.Attribute)
    return stack.attr, {"count": sources(resolve(value.args[0], d.scope(cls, init), value.lineno)), "builds": callee}


def _calls_super_init(init: Function) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "__init__"
               and isinstance(n.func.value, ast.Call) and getattr(n.func.value.func, "id", None) == "super"
               for n in nodes_of(init))


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


def _module_entry(d: DrafterCode, cls: ast.ClassDef, init: Function, node: ast.AST, parents: Parents,
                  kind: str) -> dict[str, Any]:
    entry: dict = {"kind": kind, "location": d.code.loc(node)}
    conditions = branch_conditions(d, cls, init, node, parents)
    if conditions:
        entry["when"] = conditions
    return entry


def _module_kind(value: ast.AST | None, cls: ast.ClassDef | None = None) -> str | None:
    if isinstance(value, ast.Constant) and value.value is None:
        return "absent"
    if (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Attribute) and is_self_attr(value.value)
            and not value.value.attr.endswith("config")):
        return "alias"  # self.lm_head = self.model.embed_tokens
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name == "tie_weights" and value.args and _alias_of(value):
        return "alias"  # self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
    if name == "Parameter":
        return "parameter"
    if name == "ModuleList":
        return "list"
    if name == "ModuleDict":
        return "dict"
    if cls is not None and is_self_attr(func) and (_built_by_method(cls, func.attr) or class_attribute(cls, func.attr)):
        return "module"  # self.model = self._init_model(...) / self.model_cls(...): a method or class attribute
    if name.endswith("_cls"):
        return "module"  # self.norm = norm_cls(...): a local holding the class (RMSNorm or GemmaRMSNorm)
    # a class (`nn.Linear(...)`), or a builder function that returns one (LMDeploy's `build_rowwise_linear(...)`)
    return "module" if (name[:1].isupper() or name.startswith("build_")) and name not in ("LogitsProcessor",) else None


def _alias_of(value: ast.AST) -> str:
    """`self.model.embed_tokens` / `self.lm_head.tie_weights(self.model.embed_tokens)` -> "model.embed_tokens"."""
    if isinstance(value, ast.Call) and value.args:
        value = value.args[0]
    text = ast.unparse(value)
    return text.removeprefix("self.") if text.startswith("self.") else ""


def _built_by_method(cls: ast.ClassDef, name: str) -> str | None:
    """The class a method of `cls` returns a call of (`return LlamaModel(...)`), if it returns one."""
    func = methods(cls).get(name)
    for node in nodes_of(func) if func else []:
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            callee = node.value.func
            called = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
            if called[:1].isupper():
                return called
    return None


def _builds(value: ast.Call, cls: ast.ClassDef) -> str:
    """The class a module is built from (`ParallelLMHead`, `RMSNorm`, the element of a ModuleList/ModuleDict)."""
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if is_self_attr(func):
        return _built_by_method(cls, func.attr) or class_attribute(cls, func.attr) or name
    if name in ("ModuleList", "ModuleDict") and value.args:
        inner = value.args[0]
        elt = inner.elt if isinstance(inner, (ast.ListComp, ast.GeneratorExp)) else inner.value if isinstance(
            inner, ast.DictComp) else inner.elts[0] if isinstance(inner, ast.List) and inner.elts else None
        if isinstance(elt, ast.Call):
            called = elt.func
            return called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", name)
    return name


def _dict_keys(d: DrafterCode, cls: ast.ClassDef, init: Function, value: ast.Call) -> dict[str, Any]:
    """nn.ModuleDict({str(i): ... for i in range(first, first + count)}) -> its keys as sources."""
    arg = value.args[0] if value.args else None
    if isinstance(arg, ast.DictComp) and len(arg.generators) == 1:
        it = arg.generators[0].iter
        if isinstance(it, ast.Call) and getattr(it.func, "id", None) == "range" and it.args:
            scope = d.scope(cls, init)
            if len(it.args) == 1:
                return {"first": [{"default": 0}], "count": sources(resolve(it.args[0], scope, value.lineno))}
            start, stop = it.args[0], it.args[1]
            if isinstance(stop, ast.BinOp) and isinstance(stop.op, ast.Add) and ast.unparse(stop.left) == ast.unparse(start):
                return {"first": sources(resolve(start, scope, value.lineno)),
                        "count": sources(resolve(stop.right, scope, value.lineno))}
            return {"first": sources(resolve(start, scope, value.lineno)), "count": [{"unknown": ast.unparse(stop)}]}
    return {"count": [{"unknown": ast.unparse(arg) if arg is not None else "ModuleDict()"}]}


def _list_count(d: DrafterCode, cls: ast.ClassDef, init: Function, value: ast.Call) -> list[dict[str, Any]]:
    """nn.ModuleList([... for i in range(config.num_hidden_layers)]) -> its length as sources."""
    arg = value.args[0] if value.args else None
    if isinstance(arg, ast.List):
        return [{"default": len(arg.elts)}]
    if isinstance(arg, ast.ListComp) and len(arg.generators) == 1:
        it = arg.generators[0].iter
        if isinstance(it, ast.Call) and getattr(it.func, "id", None) == "range" and len(it.args) == 1:
            return sources(resolve(it.args[0], d.scope(cls, init), value.lineno))
    return [{"unknown": ast.unparse(arg) if arg is not None else "ModuleList()"}]


# -- fc and layers -----------------------------------------------------------------------------

def fc_rule(d: DrafterCode) -> dict[str, Any] | None:
    """The `fc` input width: per-aux width x aux count, each a sources chain; and its bias."""
    holder = d.inner if d.inner is not None else d.cls
    init = methods(holder).get("__init__")
    if init is None:
        return None
    calls = [(n, n.value) for n in nodes_of(init) if creates_fc(n) and isinstance(n.value, ast.Call)]
    if not calls:
        return None
    scope = d.scope(holder, init)
    widths = []
    for assign, call in calls:
        width = next((k.value for k in call.keywords if k.arg in ("input_size", "in_features")), call.args[0] if call.args else None)
        widths.append(resolve(width, scope, assign.lineno))
    # two constructions under if/else (`if hasattr(config, "target_hidden_size")`): the first wins when present
    value = normalize(widths[0] if len(widths) == 1 else ("first", tuple(widths)))
    first_assign, first_call = calls[0]
    out: dict[str, Any] = {"location": d.code.loc(first_assign), "input_width": ast.unparse(
        next((k.value for k in first_call.keywords if k.arg in ("input_size", "in_features")),
             first_call.args[0] if first_call.args else first_call))}
    out.update(_split_width(value))
    out["bias"] = _bias(first_call, scope, first_assign.lineno)
    conditions = branch_conditions(d, holder, init, first_assign, parents_of(init))
    conditions = [c for c in conditions if not _is_hidden_size_test(c["test"])]
    if conditions:
        out["built_when"] = conditions
    return out


def _is_hidden_size_test(text: str) -> bool:
    return "hidden_size" in text


def _split_width(value: Value | None) -> dict[str, Any]:
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
