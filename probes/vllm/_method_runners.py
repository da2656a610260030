"""How a vLLM release runs each speculative method: read for `probes/vllm/methods.py`, in both shapes it has had.

- up to 0.33: an `if/elif` chain in the V1 model runner (`vllm/v1/worker/gpu_model_runner.py`) picks the
  proposer per method (`elif self.speculative_config.use_dflash(): self.drafter = DFlashProposer(...);
  self.use_aux_hidden_state_outputs = True`), the tests being `method == "x"` or `SpeculativeConfig.use_x()`;
- 0.34 on: `_CONFIG_BY_METHOD` maps each method to its `SpeculatorConfig` subclass (in a `config.py` next to
  the speculator), whose class attributes say what it needs (`uses_target_hidden_states`,
  `parallel_drafting`, `draft_has_own_vocab`), and the draft model classes declare theirs
  (`speculator_config_class = DFlashSpeculatorConfig`).
"""

from __future__ import annotations

import ast
import weakref

from compat.probes._ast import methods as class_methods
from compat.probes.vllm._common import (  # noqa: F401  (registry_file, registry_entries: for methods.py)
    find_class_def, imported_from, module_file, registry_entries, registry_file, registry_module_file,
)
from compat.core.tree import EngineTree, UnparseableFile

RUNNER_HOME = "vllm/v1/worker/gpu_model_runner.py"
CONFIG_FLAGS = ("uses_target_hidden_states", "parallel_drafting", "draft_has_own_vocab", "proposes_draft_tokens")


# -- 0.34: the config class of each method --------------------------------------------------------------
def config_classes(tree: EngineTree) -> tuple[dict[str, dict], str | None]:
    """method -> its SpeculatorConfig class (name, location, base_method, speculator_class, flags, the config keys
    it reads with their defaults, its aux-hidden-state need), and where the table is."""
    for relpath in tree.grep(b"_CONFIG_BY_METHOD", under="vllm"):
        module = tree.parse(relpath)
        table = next((n for n in module.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                      and _target_name(n) == "_CONFIG_BY_METHOD" and isinstance(n.value, ast.Dict)), None)
        if table is None:
            continue
        assert isinstance(table.value, ast.Dict)
        out = {}
        for key, value in zip(table.value.keys, table.value.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                strings = [n.value for n in ast.walk(value) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
                homes = tuple(f for s in strings[:-1] for f in tree.files("vllm/v1")
                              if f.endswith("/" + s.replace(".", "/") + ".py"))
                out[key.value] = config_class(tree, strings[-1].rsplit(".", 1)[-1], homes) if strings else {}
        return out, tree.loc(relpath, table)
    return {}, None


def _target_name(node: ast.Assign | ast.AnnAssign) -> str | None:
    target = node.targets[0] if isinstance(node, ast.Assign) else node.target
    return target.id if isinstance(target, ast.Name) else None


_CLASSES: "weakref.WeakKeyDictionary[EngineTree, dict[tuple[str, tuple[str, ...]], dict]]" = weakref.WeakKeyDictionary()


def config_class(tree: EngineTree, name: str, homes: tuple[str, ...] = ()) -> dict:
    """A SpeculatorConfig subclass: its attributes (inherited ones too), the keys it reads, its lookahead."""
    memo = _CLASSES.setdefault(tree, {})
    if (name, homes) not in memo:
        memo[(name, homes)] = _config_class(tree, name, homes)
    return memo[(name, homes)]


def _config_class(tree: EngineTree, name: str, homes: tuple[str, ...]) -> dict:
    chain = _class_chain(tree, name, homes)
    if not chain:
        return {"class": name, "location": None}
    out: dict = {"class": name, "location": tree.loc(chain[0][0], chain[0][1])}
    flags: dict = {}
    reads: list[dict] = []
    for relpath, cls in reversed(chain):  # the base first: a subclass overrides
        for stmt in cls.body:
            attr = _class_attr(stmt)
            if attr and attr[0] in ("base_method", "speculator_class", *CONFIG_FLAGS):
                (out if attr[0] in ("base_method", "speculator_class") else flags)[attr[0]] = attr[1]
        for fname, func in class_methods(cls).items():
            if fname == "uses_aux_hidden_states":
                fixed = _returns_true(func)
                flags["uses_aux_hidden_states"] = True if fixed is None else fixed
                if fixed is None:  # it depends on the drafter: `eagle_config.get("use_aux_hidden_state", True)`
                    flags["uses_aux_hidden_states_when"] = [r["key"] for r in config_reads(tree, relpath, func)]
            elif fname == "num_lookahead_tokens":
                out["lookahead"] = {"returns": [ast.unparse(r.value) for r in ast.walk(func) if isinstance(r, ast.Return) and r.value],
                                    "location": tree.loc(relpath, func)}
        reads += config_reads(tree, relpath, cls)
    out["flags"] = flags
    out["reads"] = list({r["key"]: r for r in reads}.values())
    return out


def _class_chain(tree: EngineTree, name: str, homes: tuple[str, ...] = (), depth: int = 0) -> list[tuple[str, ast.ClassDef]]:
    """The class and its bases (first base each), found where their modules say (the search of vllm/v1 last)."""
    found = None
    for relpath in homes:
        cls = next((n for n in tree.parse(relpath).body if isinstance(n, ast.ClassDef) and n.name == name), None)
        if cls is not None:
            found = (relpath, cls)
            break
    if found is None and depth < 5:
        found = find_class_def(tree, name, under="vllm/v1")
    if found is None:
        return []
    relpath, cls = found
    base = cls.bases[0] if cls.bases else None
    if not isinstance(base, ast.Name) or base.id == "object":
        return [found]
    home = module_of(tree, relpath, base.id)
    return [found, *_class_chain(tree, base.id, (relpath, *((home,) if home else ())), depth + 1)]


def _class_attr(stmt: ast.stmt) -> tuple[str, object] | None:
    target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else (
        stmt.target if isinstance(stmt, ast.AnnAssign) else None)
    value = getattr(stmt, "value", None)
    if not isinstance(target, ast.Name) or value is None:
        return None
    strings = [n.value for n in ast.walk(value) if isinstance(n, ast.Constant) and isinstance(n.value, (str, bool))]
    if isinstance(value, ast.Constant):
        return target.id, value.value
    return (target.id, "".join(s for s in strings if isinstance(s, str))) if strings else None


def _returns_true(func: ast.AST) -> bool | None:
    returns = [r.value for r in ast.walk(func) if isinstance(r, ast.Return) and r.value is not None]
    if len(returns) == 1 and isinstance(returns[0], ast.Constant):
        return bool(returns[0].value)
    return None


def config_reads(tree: EngineTree, relpath: str, node: ast.AST) -> list[dict]:
    """`getattr(hf_config, "block_size", None)` / `dflash_config.get("sample_from_anchor", False)`: the drafter
    config keys read, with their defaults and whether the value is negated (`not getattr(...)`)."""
    out = []
    parents = {child: parent for parent in ast.walk(node) for child in ast.iter_child_nodes(parent)}
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        func = call.func
        is_getattr = isinstance(func, ast.Name) and func.id == "getattr" and len(call.args) >= 2
        is_get = isinstance(func, ast.Attribute) and func.attr == "get" and bool(call.args) and "config" in ast.unparse(func.value)
        key_node = call.args[1] if is_getattr else call.args[0] if is_get else None
        if not (isinstance(key_node, ast.Constant) and isinstance(key_node.value, str)):
            continue
        holder = call.args[0] if is_getattr else func.value if isinstance(func, ast.Attribute) else None
        if not ("config" in ast.unparse(holder) if holder is not None else False):
            continue
        default_node = call.args[2] if is_getattr and len(call.args) > 2 else call.args[1] if is_get and len(call.args) > 1 else None
        parent = parents.get(call)
        out.append({"key": key_node.value, "in": ast.unparse(holder) if holder is not None else None,
                    "default": default_node.value if isinstance(default_node, ast.Constant) else (
                        ast.unparse(default_node) if default_node is not None else None),
                    "negated": isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not),
                    "location": tree.loc(relpath, call)})
    return out


def declared_drafters(tree: EngineTree) -> dict[str, dict]:
    """architecture -> {class, method, location}: draft model classes that declare their speculator config
    (`speculator_config_class = DSparkSpeculatorConfig`), the method being that config's base_method."""
    out: dict[str, dict] = {}
    for entry in registry_entries(tree):
        if entry.table != "_SPECULATIVE_DECODING_MODELS":
            continue
        relpath = registry_module_file(tree, entry.module)
        if relpath is None:
            continue
        data = tree.read_bytes(relpath)
        if b"speculator_config_class" not in data:
            continue
        try:
            module = tree.parse(relpath)
        except UnparseableFile:
            continue
        cls = next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == entry.cls), None)
        declared = next((a[1] for s in (cls.body if cls else []) if (a := _class_attr(s)) and a[0] == "speculator_config_class"), None)
        if not declared:
            declared = next((n.value.id for s in (cls.body if cls else []) for n in [s] if isinstance(n, ast.Assign)
                             and _target_name(n) == "speculator_config_class" and isinstance(n.value, ast.Name)), None)
        if isinstance(declared, str) and declared:
            home = module_of(tree, relpath, declared)
            base = config_class(tree, declared.rsplit(".", 1)[-1], (home,) if home else ()).get("base_method")
            out[entry.architecture] = {"config_class": declared, "method": base}
    return out


# -- up to 0.33: the V1 model runner's chain ----------------------------------------------------------------
def runner_chain(tree: EngineTree, names: list[str]) -> tuple[list[dict], str | None]:
    """[{methods, proposer, aux_hidden_states, location}] per branch of the runner's proposer chain."""
    if not tree.exists(RUNNER_HOME):
        return [], None
    module = tree.parse(RUNNER_HOME)
    predicates, impure = _use_predicates(tree, names)
    for node in ast.walk(module):
        if not (isinstance(node, ast.If) and _sets_drafter(node.body)):
            continue
        branches: list[dict] = []
        current: ast.If | None = node
        while current is not None:
            found = _branch_methods(current.test, predicates, names)
            called = {n.func.attr for n in ast.walk(current.test) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
            pure = "model" not in ast.unparse(current.test) and not (called & impure)
            branches.append({"methods": found, "proposer": _proposer(current.body),
                             "aux_hidden_states": _aux_methods(current.body, found), "conditional": not pure,
                             "location": tree.loc(RUNNER_HOME, current)})
            current = current.orelse[0] if len(current.orelse) == 1 and isinstance(current.orelse[0], ast.If) else None
        if len(branches) >= 3:
            return branches, tree.loc(RUNNER_HOME, node)
    return [], None


def _aux_methods(body: list[ast.stmt], methods: list[str]) -> list[str]:
    """The branch's methods for which it sets `use_aux_hidden_state_outputs` (all of them, or those a nested
    `if self.speculative_config.method == "eagle3":` names)."""
    out: list[str] = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and "use_aux_hidden_state_outputs" in ast.unparse(stmt.targets[0]):
            if not (isinstance(stmt.value, ast.Constant) and stmt.value.value is False):
                out += methods
        elif isinstance(stmt, ast.If):
            named = [n.value for n in ast.walk(stmt.test) if isinstance(n, ast.Constant) and n.value in methods]
            out += [m for m in _aux_methods(stmt.body, methods) if not named or m in named]
    return list(dict.fromkeys(out))


def _sets_drafter(body: list[ast.stmt]) -> bool:
    return any(isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "self.drafter" for s in body)


def _proposer(body: list[ast.stmt]) -> str | None:
    for stmt in body:
        if isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets[0]) == "self.drafter" and isinstance(stmt.value, ast.Call):
            return ast.unparse(stmt.value.func)
    return None


def _use_predicates(tree: EngineTree, names: list[str]) -> tuple[dict[str, list[str]], set[str]]:
    """SpeculativeConfig.use_dflash -> ["dflash"]: each predicate and the methods it holds for; and the predicates
    that also look at the drafter (`use_gemma4_mtp`: method "mtp" and a Gemma4 draft), whose branch is a variant."""
    found = find_class_def(tree, "SpeculativeConfig", prefer=("vllm/config/speculative.py",))
    if found is None:
        return {}, set()
    relpath, cls = found
    out, impure = {}, set()
    for fname, func in class_methods(cls).items():
        if fname.startswith(("use_", "uses_")):
            strings = [n.value for n in ast.walk(func) if isinstance(n, ast.Constant) and n.value in names]
            if any(isinstance(n, ast.Compare) for n in ast.walk(func)) and strings:
                out[fname] = list(dict.fromkeys(strings))
                looked_at = {ast.unparse(n) for n in ast.walk(func) if isinstance(n, ast.Attribute)} - {"self.method"}
                if any(a.startswith("self.") and a.count(".") >= 1 for a in looked_at):
                    impure.add(fname)
    return out, impure


def _branch_methods(test: ast.AST, predicates: dict[str, list[str]], names: list[str]) -> list[str]:
    out: list[str] = []
    for node in ast.walk(test):
        if isinstance(node, ast.Constant) and node.value in names:
            out.append(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in predicates:
            out += predicates[node.func.attr]
    return list(dict.fromkeys(out))


def plugin_method(tree: EngineTree) -> dict | None:
    """How plugins add a method: `register_speculative_method` (0.34) or the `custom_class` method (0.22-0.33)."""
    for relpath in tree.grep(b"def register_speculative_method", under="vllm"):
        for node in tree.parse(relpath).body:
            if isinstance(node, ast.FunctionDef) and node.name == "register_speculative_method":
                return {"how": "register_speculative_method(name, config_cls) from a vLLM general plugin",
                        "function": node.name, "location": tree.loc(relpath, node)}
    return None


def module_of(tree: EngineTree, relpath: str, name: str) -> str | None:
    origin = imported_from(tree, relpath, tree.parse(relpath), name)
    return module_file(tree, origin[0]) if origin else None


def method_rewrites(tree: EngineTree, names: list[str], groups: dict[str, list[str]]) -> dict[str, dict]:
    """name -> {runs_as, location}: `if self.method in get_args(MTPModelTypes) and self.method != "mtp": self.method =
    "mtp"` (every MTP model type runs as "mtp"), `elif self.method == "[ngram]": self.method = "ngram"`."""
    found = find_class_def(tree, "SpeculativeConfig", prefer=("vllm/config/speculative.py",))
    if found is None:
        return {}
    relpath, cls = found
    out: dict[str, dict] = {}
    for node in ast.walk(cls):
        if not (isinstance(node, ast.If) and "self.method" in ast.unparse(node.test)):
            continue
        target = next((s.value.value for s in node.body if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "self.method"
                       and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)), None)
        if target is None:
            continue
        members: list[str] = []
        for sub in ast.walk(node.test):
            if isinstance(sub, ast.Compare) and isinstance(sub.ops[0], ast.Eq):
                members += [c.value for c in sub.comparators if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            elif isinstance(sub, ast.Call) and getattr(sub.func, "id", None) == "get_args" and sub.args \
                    and isinstance(sub.args[0], ast.Name):
                members += groups.get(sub.args[0].id, [])
        for member in members:
            if member != target and member in names:
                out.setdefault(member, {"runs_as": target, "location": tree.loc(relpath, node)})
    return out


def method_predicates(tree: EngineTree, names: list[str]) -> dict[str, list[str]]:
    """SpeculativeConfig.use_eagle -> ["eagle", "eagle3", "mtp"]: each `use_*` predicate and the methods it holds for."""
    return _use_predicates(tree, names)[0]
