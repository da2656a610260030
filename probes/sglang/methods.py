"""SGLang's speculative methods: every `--speculative-algorithm` name a release accepts, in every shape it had.

- 0.4.x - 0.5.3: an `IntEnum` `SpeculativeAlgorithm` (spec_info.py), the CLI flag with argparse `choices`;
  NEXTN was a member (0.4.3), then a string ServerArgs rewrites to EAGLE (`if ... == "NEXTN": ... = "EAGLE"`);
- 0.5.4.post2 - 0.5.7: a registry-backed class (`register_speculative_algorithm("EAGLE", aliases=("NEXTN",))`);
- 0.5.8 - 0.5.11: an `Enum` again, the rewrite in ServerArgs;
- 0.5.12 on: the `Enum` plus a plugin registry (`SpeculativeAlgorithm.register`, spec_registry.py); the flag has no
  `choices`; NEXTN resolves to EAGLE in a resolver function (which promotes NEXTN/EAGLE to FROZEN_KV_MTP for a
  Gemma4 assistant draft), and from 0.5.13 `_RESERVED_ALIASES = frozenset({"NEXTN"})` in `from_string`.

Each name carries where it is declared, each alias where it is made to run as its method, and each method the
worker class the release creates for it (`if algo.is_dflash(): ... import DFlashWorkerV2`).
"""

from __future__ import annotations

import ast
import re

from compat.probes import probe
from compat.probes._ast import find_class, methods
from compat.probes.sglang._server_args import server_args_source
from compat.core.tree import EngineTree, UnparseableFile

ENUM_HOME = "sglang/srt/speculative/spec_info.py"
_MEMBER = re.compile(r"^[A-Z][A-Z0-9_]*$")
_WORKER = re.compile(r"Worker")


@probe("sglang", "methods", "Speculative methods (--speculative-algorithm names, aliases, workers)", order=89)
def speculative_methods(tree: EngineTree) -> dict:
    found = find_class(tree, "SpeculativeAlgorithm", prefer=[ENUM_HOME], under="sglang/srt/speculative")
    if found is None:
        return {"present": False, "reason": "no class SpeculativeAlgorithm under sglang/srt/speculative"}
    relpath, cls = found
    module = tree.parse(relpath)
    shape, members = _members(tree, relpath, module, cls)
    names = [m["name"] for m in members]
    flag = _flag(tree)
    aliases = _aliases(tree, relpath, module, set(names))
    choices = flag.get("choices") if isinstance(flag.get("choices"), list) else None
    accepted = list(choices) if choices is not None else names + [a["name"] for a in aliases if a["name"] not in names]
    out: dict = {
        "present": True, "location": tree.loc(relpath, cls), "declared_by": shape,
        "names": members, "aliases": aliases, "accepted": accepted,
        "accepted_from": "argparse choices" if choices is not None else f"{shape} members and aliases (a free string flag)",
        "case": "folded" if _folds_case(cls) else "as typed",
        "choices": choices, "choices_location": flag.get("location"),
        "promotions": _promotions(tree, relpath, set(names)),
        "plugins": _plugins(tree, relpath, cls),
        "workers": _workers(tree, relpath, module, cls, names),
        "block": _block_reads(tree, names),
    }
    return out


# -- block drafters: which layout the release reads the draft block in ---------------------------------
def _block_reads(tree: EngineTree, names: list[str]) -> dict[str, list[dict]]:
    """DSPARK -> [{key, default, location}]: `_cfg_get(draft_hf_config, "sample_from_anchor", True)` in the method's
    files (none: the release always reads the block anchor-first, gamma wide)."""
    out: dict[str, list[dict]] = {}
    for member in names:
        if member != "DSPARK":  # DFlash's block is always the bonus-anchor one
            continue
        reads: list[dict] = []
        for path in tree.grep(b"sample_from_anchor", under="sglang/srt"):
            if member.lower() not in path.rsplit("/", 1)[-1]:
                continue
            parsed = _parse(tree, path)
            for call in (n for n in ast.walk(parsed) if isinstance(n, ast.Call)) if parsed else []:
                name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
                if name not in ("_cfg_get", "getattr", "get") or len(call.args) < 2:
                    continue
                key, default = (call.args[1], call.args[2] if len(call.args) > 2 else None) if name != "get" else (
                    call.args[0], call.args[1])
                if isinstance(key, ast.Constant) and key.value == "sample_from_anchor":
                    reads.append({"key": key.value, "default": default.value if isinstance(default, ast.Constant) else None,
                                  "negated": False, "location": tree.loc(path, call)})
        out[member] = reads[:1]
    return out


# -- the names ------------------------------------------------------------------------------------------
def _members(tree: EngineTree, relpath: str, module: ast.Module, cls: ast.ClassDef) -> tuple[str, list[dict]]:
    bases = [ast.unparse(b) for b in cls.bases]
    enum_base = next((b.rsplit(".", 1)[-1] for b in bases if b.rsplit(".", 1)[-1] in ("IntEnum", "Enum")), None)
    if enum_base is not None:
        members = [{"name": t.id, "location": tree.loc(relpath, stmt), "declared": "member"}
                   for stmt in cls.body if isinstance(stmt, ast.Assign) for t in stmt.targets
                   if isinstance(t, ast.Name) and _MEMBER.match(t.id) and t.id != "NONE"]
        return enum_base, members
    # a registry-backed class: its built-ins are registered by calls at module level
    members = []
    for stmt in module.body:
        call = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
        if not isinstance(call, ast.Call) or not _is_register(call):
            continue
        name = _first_string(call)
        if name and _MEMBER.match(name) and name != "NONE":
            members.append({"name": name, "location": tree.loc(relpath, stmt), "declared": "registered"})
    return "registry class", members


def _is_register(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name == "register" or name.startswith("register_speculative")


def _first_string(call: ast.Call) -> str | None:
    first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "name"), None)
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _folds_case(cls: ast.ClassDef) -> bool:
    """`from_string` upper-cases the name (`name.upper()`): `eagle3` is EAGLE3."""
    func = methods(cls).get("from_string")
    return func is not None and any(isinstance(n, ast.Attribute) and n.attr == "upper" for n in ast.walk(func))


def _flag(tree: EngineTree) -> dict:
    source = server_args_source(tree)
    flag = next((f for f in source.flags if f.dest == "speculative_algorithm"), None) if source else None
    if flag is None:
        return {}
    return {"choices": flag.choices, "location": tree.loc(flag.relpath, flag.node)}


# -- aliases: a name the release runs as another ----------------------------------------------------
def _alias_files(tree: EngineTree, relpath: str) -> list[str]:
    source = server_args_source(tree)
    files = [relpath, *tree.grep(b"SpeculativeAlgorithm", under="sglang/srt/speculative")]
    if source is not None:
        files.append(source.relpath)
    files += tree.grep(b"speculative_algorithm", under="sglang/srt/arg_groups")
    return list(dict.fromkeys(files))


def _parse(tree: EngineTree, relpath: str) -> ast.Module | None:
    try:
        return tree.parse(relpath)
    except UnparseableFile:
        return None


def _aliases(tree: EngineTree, relpath: str, module: ast.Module, members: set[str]) -> list[dict]:
    """Each alias with every place the release makes it run as its method (0.5.13+ has two: the resolver that
    rewrites it, and from_string's reserved aliases)."""
    out: dict[str, dict] = {}

    def add(alias: str, target: str, how: str, where: str) -> None:
        if alias in members:
            return
        entry = out.setdefault(alias, {"name": alias, "runs_as": target, "location": where, "forms": []})
        entry["forms"].append({"how": how, "runs_as": target, "location": where})

    for path in _alias_files(tree, relpath):
        parsed = module if path == relpath else _parse(tree, path)
        if parsed is None:
            continue
        for node in ast.walk(parsed):
            if isinstance(node, ast.If):
                for alias, target in _rewrite(node, members):
                    add(alias, target, "rewritten to it before the worker is made", tree.loc(path, node))
            elif isinstance(node, ast.Call) and _is_register(node):
                registered = _first_string(node)
                for alias in _keyword_strings(node, "aliases"):
                    if registered:
                        add(alias, registered, "a registered alias", tree.loc(path, node))
        for alias, target, where in _alias_sets(tree, parsed, members):
            add(alias, target, "a reserved alias from_string maps to it", tree.loc(path, where))
    return list(out.values())


def _compared_strings(test: ast.AST) -> list[str]:
    """The upper-case strings an `if` compares a value with (`x == "NEXTN" or x == "EAGLE"`)."""
    found = []
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
            for side in (node.left, *node.comparators):
                if isinstance(side, ast.Constant) and isinstance(side.value, str) and _MEMBER.match(side.value):
                    found.append(side.value)
    return found


def _rewrite(node: ast.If, members: set[str]) -> list[tuple[str, str]]:
    """`if x == "NEXTN": x = "EAGLE"` / `if x == "NEXTN" or x == "EAGLE": ... return "EAGLE"`: (alias, method)."""
    compared = _compared_strings(node.test)
    aliases = [s for s in compared if s not in members]
    if not aliases:
        return []
    for stmt in node.body:  # the direct statements: a nested `if` is a promotion, not the alias
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Return)) else None
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value in members:
            return [(a, value.value) for a in aliases]
    return []


def _keyword_strings(call: ast.Call, name: str) -> list[str]:
    value = next((k.value for k in call.keywords if k.arg == name), None)
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _alias_sets(tree: EngineTree, module: ast.Module, members: set[str]) -> list[tuple[str, str, ast.AST]]:
    """`_RESERVED_ALIASES = frozenset({"NEXTN"})` and, in from_string, `if upper in _RESERVED_ALIASES: return cls.EAGLE`."""
    out: list[tuple[str, str, ast.AST]] = []
    for node in ast.walk(module):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1
                and isinstance(node.test.ops[0], ast.In) and isinstance(node.test.comparators[0], ast.Name)
                and "ALIAS" in node.test.comparators[0].id.upper()):
            continue
        ret = next((s for s in node.body if isinstance(s, ast.Return)), None)
        target = ret.value.attr if ret is not None and isinstance(ret.value, ast.Attribute) else None
        if target not in members:
            continue
        name = node.test.comparators[0].id
        aliases = _set_strings(module, name)
        for path in ([] if aliases else tree.grep(name.encode(), under="sglang/srt/speculative")):
            parsed = _parse(tree, path)
            aliases = _set_strings(parsed, name) if parsed is not None else []
            if aliases:
                break
        out.extend((alias, str(target), node) for alias in aliases)
    return out


def _set_strings(module: ast.Module, name: str) -> list[str]:
    for stmt in module.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return [n.value for n in ast.walk(stmt.value) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return []


def _promotions(tree: EngineTree, relpath: str, members: set[str]) -> list[dict]:
    """`if x == "NEXTN" or x == "EAGLE": if is_gemma4_draft: return "FROZEN_KV_MTP"`: a method run as another
    when the draft is of some kind (what decides it, in the release's words)."""
    out = []
    for path in _alias_files(tree, relpath):
        parsed = _parse(tree, path)
        if parsed is None:
            continue
        for node in ast.walk(parsed):
            if not isinstance(node, ast.If):
                continue
            compared = _compared_strings(node.test)
            if not compared:
                continue
            for inner in (s for s in node.body if isinstance(s, ast.If)):
                ret = next((s for s in inner.body if isinstance(s, ast.Return)), None)
                value = ret.value if ret is not None else None
                if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value in members:
                    out.append({"from": compared, "to": value.value, "when": ast.unparse(inner.test),
                                "decided_by": _decided_by(parsed, inner.test), "location": tree.loc(path, inner)})
    return out


def _decided_by(module: ast.Module, test: ast.AST) -> list[str]:
    """The architecture names the promotion's condition was computed from (`is_gemma4_draft = any(arch in (...))`)."""
    names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    found: list[str] = []
    for node in ast.walk(module):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in node.targets):
            found += [c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)
                      and c.value.endswith(("ForCausalLM", "Model"))]
    return list(dict.fromkeys(found))


# -- plugins --------------------------------------------------------------------------------------------
def _plugins(tree: EngineTree, relpath: str, cls: ast.ClassDef) -> dict | None:
    """Plugin algorithms: `SpeculativeAlgorithm.register` (0.5.12+, a decorator over a worker factory) or the
    registry class's `register_speculative_algorithm`; the names a plugin may not take."""
    register = methods(cls).get("register")
    if register is None:
        return None
    out: dict = {"register": "SpeculativeAlgorithm.register", "location": tree.loc(relpath, register)}
    for path in tree.grep(b"_RESERVED", under="sglang/srt/speculative"):
        parsed = _parse(tree, path)
        for stmt in parsed.body if parsed else []:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and "RESERVED" in t.id for t in stmt.targets):
                reserved = [n.value for n in ast.walk(stmt.value) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
                if reserved:
                    out["reserved"], out["reserved_location"] = reserved, tree.loc(path, stmt)
                    out["reserved_also"] = "every built-in member" if len(reserved) == 1 else None
    return out


# -- workers --------------------------------------------------------------------------------------------
def _predicates(cls: ast.ClassDef, names: list[str]) -> dict[str, list[str]]:
    """is_dflash -> [DFLASH], is_eagle -> [EAGLE, EAGLE3]: the members a predicate compares self with."""
    out = {}
    for fname, func in methods(cls).items():
        if fname.startswith("is_"):
            compared = list(dict.fromkeys(n.attr for n in ast.walk(func) if isinstance(n, ast.Attribute) and n.attr in names))
            if compared:
                out[fname] = compared
    return out


def _workers(tree: EngineTree, relpath: str, module: ast.Module, cls: ast.ClassDef, names: list[str]) -> dict[str, dict]:
    """The worker class each method runs on: `if self.is_dflash(): from ... import DFlashWorkerV2` in
    create_worker (0.5.12+), the scheduler (earlier), or the factory a registry class registers."""
    predicates = _predicates(cls, names)
    out: dict[str, dict] = {}
    found: list[tuple[int, str, dict]] = []
    files = [relpath] + [f for f in tree.grep(b"spec_algorithm.is_", under="sglang/srt/managers") if f.endswith("scheduler.py")]
    for path in files:
        parsed = module if path == relpath else _parse(tree, path)
        for node in ast.walk(parsed) if parsed else []:
            if not isinstance(node, ast.If):
                continue
            test = node.test  # only `if algo.is_x():` (an extra condition picks a variant worker)
            called = test.func.attr if (isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute)
                                        and test.func.attr in predicates) else None
            worker = _imported_worker(node.body) if called else None
            if called and worker:
                for member in sorted(predicates[called], key=lambda m: len(predicates[called]) > 1):
                    found.append((len(predicates[called]), member,
                                  {"class": worker[0], "module": worker[1], "location": tree.loc(path, node)}))
    for _, member, entry in sorted(found, key=lambda f: f[0]):  # a one-member predicate wins over is_eagle
        out.setdefault(member, entry)
    for stmt in module.body:  # a registry class: register_speculative_algorithm("EAGLE", worker_cls=_create_eagle_worker)
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and _is_register(call):
            name = _first_string(call)
            factory = next((k.value for k in call.keywords if k.arg in ("worker_cls", "draft_worker_factory")), None)
            func = next((f for f in module.body if isinstance(f, ast.FunctionDef) and isinstance(factory, ast.Name)
                         and f.name == factory.id), None)
            worker = _imported_worker(func.body) if func is not None else None
            if name and worker:
                out.setdefault(name, {"class": worker[0], "module": worker[1], "location": tree.loc(relpath, stmt)})
    return out


def _imported_worker(body: list[ast.stmt]) -> tuple[str, str] | None:
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if _WORKER.search(alias.name):
                    return alias.name, node.module
    return None
