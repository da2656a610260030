"""vLLM's speculative methods: every `method` a release accepts, and for each what runs it.

The names are `SpeculativeConfig.method`'s Literal tree (`SpeculativeMethod` -> `EagleModelTypes` ->
`MTPModelTypes`, each name with the alias it sits in); per method: what runs it (the V1 model runner's
`if/elif` chain up to 0.33, the `SpeculatorConfig` class of `_CONFIG_BY_METHOD` from 0.34) and whether it feeds
the drafter the target's aux hidden states (then the target must implement SupportsEagle3, and the layer-id
reader applies: its keys and offsets, from the aux_layer_ids reading); the drafter classes that declare it;
the config keys its block rule reads (`sample_from_anchor`, `dspark_bonus_anchor`, `block_size`); a package the
serving venv needs (suffix: `arctic_inference`); the speculators-format types the release translates
(`@register_speculator`), with what each raises and how it maps the layer ids; how plugins add a method.
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes._ast import class_fields, field_name
from compat.probes.vllm import _method_runners as runners
from compat.probes.vllm._common import literal_strings, resolve_name, speculative_config_class
from compat.probes.vllm.aux_layer_ids import aux_layer_ids
from compat.core.tree import EngineTree, UnparseableFile

SPECULATORS_HOME = "vllm/transformers_utils/configs/speculators"
BLOCK_KEYS = ("sample_from_anchor", "dspark_bonus_anchor", "block_size", "dspark_block_size")


@probe("vllm", "methods", "Speculative methods: names, what runs each, drafter classes, layer-id readers", order=89)
def speculative_methods(tree: EngineTree) -> dict:
    found = speculative_config_class(tree)
    if found is None:
        return {"present": False, "reason": "no class SpeculativeConfig in vllm/"}
    relpath, cls = found
    field = next((f for f in class_fields(cls) if field_name(f) == "method"), None)
    if field is None:
        return {"present": False, "reason": "SpeculativeConfig has no method field"}
    names = _names(tree, relpath, field.annotation)
    plain = [n["name"] for n in names]
    configs, table = runners.config_classes(tree)
    chain, chain_at = runners.runner_chain(tree, plain) if not configs else ([], None)
    reader = _reader(tree)
    declared = runners.declared_drafters(tree) if configs else {}
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(n["group"], []).append(n["name"])
    rewrites = runners.method_rewrites(tree, plain, groups)
    per: dict[str, dict] = {}
    for name in plain:
        entry: dict = dict(rewrites.get(name) or {})
        if name in configs:
            entry["config_class"] = configs[name]
            entry["aux_hidden_states"] = bool(configs[name].get("flags", {}).get("uses_aux_hidden_states"))
        else:
            branches = [b for b in chain if name in b["methods"]]
            if branches:  # a branch that also tests the drafter (use_gemma4_mtp) is a variant: the plain one is primary
                entry["runner_branch"] = next((b for b in branches if not b["conditional"]), branches[-1])
                entry["runner_variants"] = [b for b in branches if b is not entry["runner_branch"]]
                entry["aux_hidden_states"] = name in entry["runner_branch"]["aux_hidden_states"]
        if entry.get("aux_hidden_states"):
            entry["layer_id_reader"] = reader
        drafters = sorted(a for a, d in declared.items() if d.get("method") == name)
        if drafters:
            entry["declared_drafters"] = drafters
        per[name] = entry
    _venv_needs(tree, per)
    _block_rules(tree, per)
    return {
        "present": True, "location": names[0]["location"] if names else tree.loc(relpath, field),
        "names": names, "methods": per,
        "runs_by": "config classes (_CONFIG_BY_METHOD)" if configs else "the V1 model runner's proposer chain",
        "runs_by_location": table or chain_at,
        "declared_drafters": declared,
        "drafters": {e.architecture: {"class": e.cls, "module": e.module, "location": tree.loc(runners.registry_file(tree) or "", e.lineno)}
                     for e in runners.registry_entries(tree) if e.table == "_SPECULATIVE_DECODING_MODELS"},
        "speculators_types": _speculators_types(tree),
        "plugins": runners.plugin_method(tree) or _custom_class(plain),
    }


def _names(tree: EngineTree, relpath: str, annotation: ast.AST) -> list[dict]:
    """Every name of the method's Literal tree, with the alias it is written in and its line."""
    out: dict[str, dict] = {}

    def walk(where: str, node: ast.AST | None, group: str, seen: frozenset) -> None:
        if node is None:
            return
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.setdefault(node.value, {"name": node.value, "group": group, "location": tree.loc(where, node)})
        elif isinstance(node, ast.Tuple):
            for elt in node.elts:
                walk(where, elt, group, seen)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            walk(where, node.left, group, seen)
            walk(where, node.right, group, seen)
        elif isinstance(node, ast.Subscript):
            head = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
            if head in ("Literal", "Optional", "Union"):
                walk(where, node.slice, group, seen)
        elif isinstance(node, ast.Name) and node.id not in seen:
            found = resolve_name(tree, where, node.id)
            if found:
                walk(found[0], found[1].value, node.id, seen | {node.id})

    walk(relpath, annotation, "method", frozenset())
    assert set(out) == set(literal_strings(tree, relpath, annotation))  # the same tree speculative_config reads
    return list(out.values())


def _reader(tree: EngineTree) -> dict:
    """The layer-id reader the aux-hidden-state methods share (the aux_layer_ids reading, runner by runner)."""
    aux = aux_layer_ids(tree)
    return {"runners": [{"runner": r.get("runner"), "function": r.get("function"), "location": r.get("location"),
                         "keys": r.get("keys") or []} for r in aux.get("runners") or []],
            "default": aux.get("default"), "default_location": aux.get("default_location"),
            "read_from_config": aux.get("read_from_config")}


def _venv_needs(tree: EngineTree, per: dict[str, dict]) -> None:
    """A method whose branch checks for an optional package (`if self.method == "suffix": ... if not
    has_arctic_inference(): raise ImportError("... pip install arctic-inference==0.1.1")`)."""
    for relpath in tree.grep(b"_has_module(", under="vllm/utils"):
        for func in (n for n in tree.parse(relpath).body if isinstance(n, ast.FunctionDef) and n.name.startswith("has_")):
            module = next((c.args[0].value for c in ast.walk(func) if isinstance(c, ast.Call) and c.args
                           and isinstance(c.args[0], ast.Constant) and isinstance(c.args[0].value, str)), None)
            if module is None:
                continue
            for user in tree.grep(f"{func.name}()".encode(), under="vllm/config"):
                _venv_branches(tree, user, func.name, module, tree.loc(relpath, func), per)


def _venv_branches(tree: EngineTree, user: str, checker: str, module: str, where: str, per: dict[str, dict]) -> None:
    """The method branches that call `checker()`, directly or through a helper (`self._validate_suffix_decoding()`)."""
    parsed = tree.parse(user)
    holders = {f.name: f for f in ast.walk(parsed) if isinstance(f, ast.FunctionDef)
               and any(isinstance(c, ast.Call) and getattr(c.func, "id", None) == checker for c in ast.walk(f))}
    for branch in ast.walk(parsed):
        if not (isinstance(branch, ast.If) and "method" in ast.unparse(branch.test)):
            continue
        named = [n.value for n in ast.walk(branch.test) if isinstance(n, ast.Constant) and n.value in per]
        calls = [c for s in branch.body for c in ast.walk(s) if isinstance(c, ast.Call)]
        direct = any(getattr(c.func, "id", None) == checker for c in calls)
        helper = next((holders[c.func.attr] for c in calls if isinstance(c.func, ast.Attribute) and c.func.attr in holders), None)
        if len(named) != 1 or not (direct or helper):
            continue
        scope = helper.body if helper is not None else branch.body
        text = " ".join(c.value for s in scope for c in ast.walk(s) if isinstance(c, ast.Constant) and isinstance(c.value, str))
        at = text.find("pip install ")
        per[named[0]]["venv"] = {"module": module, "checked_by": checker, "where_checked": tree.loc(user, branch),
                                 "install": text[at:].split("`")[0].strip().rstrip(".") if at >= 0 else "",
                                 "location": where}


def _block_rules(tree: EngineTree, per: dict[str, dict]) -> None:
    """The keys a block drafter's speculator reads for its block layout (`self.sample_from_anchor = getattr(...)`)."""
    for name in ("dflash", "dspark"):
        if name not in per:
            continue
        reads: list[dict] = []
        for relpath in tree.grep(b"sample_from_anchor", under="vllm/v1"):
            if f"/{name}/" not in relpath and not relpath.endswith(f"{name}.py"):
                continue
            try:
                module = tree.parse(relpath)
            except UnparseableFile:
                continue
            for node in ast.walk(module):
                if isinstance(node, ast.Assign) and "sample_from_anchor" in ast.unparse(node.targets[0]):
                    reads += [r for r in runners.config_reads(tree, relpath, node) if r["key"] in BLOCK_KEYS]
        config = per[name].get("config_class") or {}
        reads += [r for r in config.get("reads") or [] if r["key"] in BLOCK_KEYS]
        if reads or config.get("lookahead"):
            per[name]["block"] = {"reads": list({(r["key"], r["negated"]): r for r in reads}.values()),
                                  "lookahead": config.get("lookahead")}


def _speculators_types(tree: EngineTree) -> dict[str, dict]:
    """`@register_speculator("dflash")`: each type, what it raises, the architectures it sets and how it maps ids."""
    out: dict[str, dict] = {}
    for relpath in tree.grep(b"register_speculator(", under=SPECULATORS_HOME):
        for func in (n for n in tree.parse(relpath).body if isinstance(n, ast.FunctionDef)):
            name = next((d.args[0].value for d in func.decorator_list if isinstance(d, ast.Call) and d.args
                         and getattr(d.func, "id", None) == "register_speculator" and isinstance(d.args[0], ast.Constant)), None)
            if not isinstance(name, str):
                continue
            raises = next((ast.unparse(r.exc) for r in ast.walk(func) if isinstance(r, ast.Raise) and r.exc is not None
                           and func.body and isinstance(func.body[-1], ast.Raise) and len(_statements(func)) == 1), None)
            archs = sorted({n.value for n in ast.walk(func) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                            and n.value.endswith(("ForCausalLM", "Model"))})
            out[name] = {"function": func.name, "location": tree.loc(relpath, func), "raises": raises,
                         "architectures": archs, "layer_ids": _id_maps(tree, relpath, func),
                         "defaults": {r["key"]: r["default"] for r in runners.config_reads(tree, relpath, func)
                                      if r["key"] in BLOCK_KEYS},
                         "sets": {k: v for k, v in _constant_sets(func).items() if k in BLOCK_KEYS}}
    return out


def _constant_sets(func: ast.FunctionDef) -> dict[str, object]:
    """`pre_trained_config["dspark_bonus_anchor"] = True` (0.25.0): keys the translation sets to a constant."""
    out: dict[str, object] = {}
    for node in ast.walk(func):
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript) and isinstance(node.value, ast.Constant)
                and isinstance(node.targets[0].slice, ast.Constant) and isinstance(node.targets[0].slice.value, str)):
            out[node.targets[0].slice.value] = node.value.value
    return out


def _statements(func: ast.FunctionDef) -> list[ast.stmt]:
    body = func.body[1:] if func.body and isinstance(func.body[0], ast.Expr) and isinstance(func.body[0].value, ast.Constant) else func.body
    return body


def _id_maps(tree: EngineTree, relpath: str, func: ast.FunctionDef) -> list[dict]:
    """`pre_trained_config["target_layer_ids"] = [i - 1 for i in aux_layer_ids]`: key written, offset, source key."""
    sources: dict[str, str] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Subscript):
            key = node.value.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and "layer_ids" in key.value:
                sources[node.targets[0].id] = key.value
    out = []
    for node in ast.walk(func):
        if not isinstance(node, ast.Assign):
            continue
        target = ast.unparse(node.targets[0])
        if "layer_ids" not in target and not isinstance(node.value, ast.Dict):
            continue
        values = [(target, node.value)] if not isinstance(node.value, ast.Dict) else [
            (f"{target}[{ast.unparse(k)}]", v) for k, v in zip(node.value.keys, node.value.values) if k is not None
            and "layer_ids" in ast.unparse(k)]
        for written, value in values:
            offset, source = _shift(value, sources)
            if source is not None:
                out.append({"writes": _key_of(written), "from": source, "offset": offset, "location": tree.loc(relpath, node)})
    return out


def _shift(value: ast.AST, sources: dict[str, str]) -> tuple[int, str | None]:
    if isinstance(value, ast.Name) and value.id in sources:
        return 0, sources[value.id]
    if isinstance(value, ast.ListComp) and isinstance(value.generators[0].iter, ast.Name):
        src = sources.get(value.generators[0].iter.id)
        elt = value.elt
        if isinstance(elt, ast.BinOp) and isinstance(elt.right, ast.Constant) and isinstance(elt.right.value, int):
            return (elt.right.value if isinstance(elt.op, ast.Add) else -elt.right.value), src
        return 0, src
    return 0, None


def _key_of(written: str) -> str:
    """`pre_trained_config["dflash_config"]['target_layer_ids']` -> `dflash_config.target_layer_ids`."""
    parts = [p.strip("'\"") for p in written.replace("]", "").split("[")[1:]]
    return ".".join(parts)


def _custom_class(names: list[str]) -> dict | None:
    if "custom_class" in names:
        return {"how": 'method "custom_class" with a proposer class named in the config', "function": None, "location": None}
    return None
