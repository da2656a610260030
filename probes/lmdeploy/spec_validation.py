"""The code LMDeploy runs on `lmdeploy serve api_server`'s speculative arguments before any weight loads, as statements
doctor walks with the line's values (compat/guards/), in the spec_validation form the other engines' probes write.

The path, found by what the code does (not by a file name):
- the builder: the function under lmdeploy/cli that turns the parsed arguments into the config
  (`get_speculative_config(args)` in lmdeploy/cli/utils.py: `SpeculativeConfig(method=args.speculative_algorithm, ...)`,
  and in 0.18.0 `--speculative-dflash-block-size requires --speculative-algorithm dflash.`). It is the entry: its
  `args` are the line's options by their argparse dests, the release's parser defaults where the line says nothing;
- the config it builds: `SpeculativeConfig` (lmdeploy/messages.py), a dataclass: its fields' defaults, and its
  `__post_init__` (0.18.0: `dflash_block_size is supported only when method="dflash".`, `... greater than or equal to
  2.`, and `num_speculative_tokens = dflash_block_size - 1`).

Not walked yet: the engine's side, run when the PyTorch engine starts (`ConfigBuilder.build_specdecode_config`,
`SpecDecodeConfig.from_config`, the DFlash validators of spec_decode/dflash_utils.py, the proposer registry's `<method>
not found`). They read objects the engine builds from the line (its cache, distribution and model configs), which the
walk does not build yet. The fact lists each of their raises under `unwalked`, with file:line and the methods whose
path reaches it (the `if method == 'dflash'` tests around it and around the calls that lead to it; the registry's
raise: the methods it lacks, which the parser's `choices` keep a CLI line from); the walk counts each as a raise that
may happen on a line of those methods ("cannot tell"), never a pass.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes._ast import class_fields, field_name, safe_parse
from compat.probes._validation import Program, field_entry
from compat.probes.lmdeploy._engine_stage import engine_stage
from compat.probes.lmdeploy._source import CLI, SPEC_DECODE, call_name, raises, registered_proposers
from compat.probes.lmdeploy.cli_arguments import cli_arguments

CONFIG_CLASS = "SpeculativeConfig"
ARGS = "Namespace"  # what the builder is handed: argparse's parsed arguments, named by their dests


@probe("lmdeploy", "spec_validation", "The speculative arguments' validation, as statements (doctor evaluates them)",
       order=88)
def spec_validation(tree: EngineTree) -> dict:
    builder = _builder(tree)
    if builder is None:
        return {"present": False, "reason": f"no function under {CLI} builds a {CONFIG_CLASS} from the parsed arguments "
                "(LMDeploy has speculative decoding from 0.11.0)"}
    relpath, fn = builder
    config = _config_class(tree)
    if config is None:
        return {"present": False, "reason": f"no class {CONFIG_CLASS} in lmdeploy/messages.py",
                "location": tree.loc(relpath, fn)}
    config_path, cls = config
    program = Program(tree, lambda where, name: None)  # the builder and the config read no module constants
    program.add_class(config_path, cls)
    construction: list[str] = []
    post = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__post_init__"), None)
    if post is not None:
        program.function(config_path, post, f"{CONFIG_CLASS}.__post_init__", CONFIG_CLASS, whole=True)
        construction.append(f"{CONFIG_CLASS}.__post_init__")
    program.function(relpath, fn, fn.name, whole=True, receiver=ARGS)  # handed the parsed arguments
    engine = engine_stage(tree, program)
    read_back = program.to_json()
    config_spec = {"name": CONFIG_CLASS, "file": config_path, "line": cls.lineno,
                   "fields": {field_name(f): field_entry(f) for f in class_fields(cls)}, "construction": construction}
    engine_reads = engine[0]["from_args"] if engine is not None else {}
    classes = [_arguments(tree, fn, engine_reads), config_spec] + (engine[1] if engine is not None else [])
    known = {c["name"] for c in classes}
    classes += [c for c in read_back.pop("classes") if c["name"] not in known]
    walked = {key.rpartition(".")[2] for key, f in read_back["functions"].items() if f.get("body") is not None}
    out: dict[str, Any] = {"present": True, "location": tree.loc(relpath, fn), "entry": fn.name, "classes": classes,
                           "unwalked": [e for e in _engine_side(tree) if e["function"] not in walked]}
    if engine is not None:
        out["engine"] = engine[0]
    out.update(read_back)
    return out


def _builder(tree: EngineTree) -> tuple[str, ast.FunctionDef] | None:
    """The module function under lmdeploy/cli that calls SpeculativeConfig(...) with one parameter (the arguments)."""
    for relpath in tree.grep(CONFIG_CLASS.encode(), under=CLI):
        module = safe_parse(tree, relpath)
        for node in module.body if module else ():
            if isinstance(node, ast.FunctionDef) and len(node.args.args) == 1 and any(
                    isinstance(n, ast.Call) and call_name(n) == CONFIG_CLASS for n in ast.walk(node)):
                return relpath, node
    return None


def _config_class(tree: EngineTree) -> tuple[str, ast.ClassDef] | None:
    for relpath in ["lmdeploy/messages.py"] + [p for p in tree.grep(f"class {CONFIG_CLASS}".encode(), under="lmdeploy")
                                               if p != "lmdeploy/messages.py"]:
        module = safe_parse(tree, relpath) if tree.exists(relpath) else None
        for node in module.body if module else ():
            if isinstance(node, ast.ClassDef) and node.name == CONFIG_CLASS:
                return relpath, node
    return None


def _arguments(tree: EngineTree, fn: ast.FunctionDef, engine_reads: dict[str, str]) -> dict:
    """The parsed arguments the builder reads (`args.x`, `getattr(args, 'x', ...)`), each with the default the release's
    parser declares for it and where (the cli_arguments fact's reading): what a line that leaves one out starts with."""
    name = fn.args.args[0].arg
    read: dict[str, None] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name:
            read[node.attr] = None
        elif isinstance(node, ast.Call) and call_name(node) in ("getattr", "hasattr") and len(node.args) >= 2 \
                and isinstance(node.args[0], ast.Name) and node.args[0].id == name \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            read[node.args[1].value] = None
    feeds = _feeds(fn, name)
    for field, dest in engine_reads.items():  # the engine config's fields the CLI sets from the line (`dp=args.dp`)
        read[dest] = None
        if field not in feeds.setdefault(dest, []):
            feeds[dest].append(field)
    fields: dict[str, dict] = {}
    parsed = cli_arguments(tree)
    for argument in parsed.get("arguments") or []:
        dest = argument.get("dest") or argument["name"].lstrip("-").replace("-", "_")
        if dest in read and dest not in fields:
            entry: dict[str, Any] = {"option": argument["name"], "at": argument.get("location")}
            if "default" in argument:
                entry["default"] = argument["default"]
            if feeds.get(dest):
                entry["feeds"] = feeds[dest]
            fields[dest] = entry
    where, _, line = str(parsed.get("location") or "").partition(":")
    return {"name": ARGS, "file": where, "line": int(line) if line.isdigit() else 0, "fields": fields, "construction": []}


def _feeds(fn: ast.FunctionDef, name: str) -> dict[str, list[str]]:
    """dest -> the names its value goes by on the way into the config: the builder's local it is read into
    (`dflash_block_size = getattr(args, 'speculative_dflash_block_size', None)`) and the config's keyword it is passed
    as (`SpeculativeConfig(dflash_block_size=dflash_block_size)`): what a raise in __post_init__ reads is that option."""
    def dest_of(node: ast.AST) -> str | None:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name:
            return node.attr
        if isinstance(node, ast.Call) and call_name(node) == "getattr" and len(node.args) >= 2 \
                and isinstance(node.args[0], ast.Name) and node.args[0].id == name \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            return node.args[1].value
        return None

    local: dict[str, str] = {}
    out: dict[str, list[str]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            dest = dest_of(node.value)
            if dest is not None:
                local[node.targets[0].id] = dest
                out.setdefault(dest, []).append(node.targets[0].id)
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and call_name(node) == CONFIG_CLASS:
            for keyword in node.keywords:
                dest = dest_of(keyword.value) or (local.get(keyword.value.id) if isinstance(keyword.value, ast.Name) else None)
                if dest is not None and keyword.arg and keyword.arg not in out.setdefault(dest, []):
                    out[dest].append(keyword.arg)
    return out


def _engine_side(tree: EngineTree) -> list[dict[str, Any]]:
    """Every raise and assert of the engine's side of the path (not walked), with the methods whose path reaches it,
    read from the `if` tests around it and around the calls that lead to it (`elif speculative_config.method ==
    'dflash': validate_dflash_dist_config(...)`): {"location", "function", "raises", "message", "field": "method",
    "values": [...]} (only those methods), or "except": [...] (the proposer registry's raise: the methods it lacks)."""
    functions = _engine_functions(tree)
    callers: dict[str, list[tuple[str, list[str] | None]]] = {}
    for name, (_, node) in functions.items():
        for call, tests in _with_tests(node):
            callee = call_name(call) if isinstance(call, ast.Call) else ""
            if callee in functions and callee != name:
                callers.setdefault(callee, []).append((name, _methods(tests)))
    registered = sorted({p.method for p in registered_proposers(tree)})
    out: list[dict[str, Any]] = []
    for name, (relpath, node) in functions.items():
        for refusal in raises(relpath, node, name):
            site = refusal.to_json(tree)
            entry: dict[str, Any] = {"location": site["location"], "function": name, "raises": site["raises"],
                                     "message": site["message"], "field": "method"}
            if name == PROPOSER_BUILDER:  # `if method in SPEC_PROPOSERS.module_dict: return ...` before it
                entry["except"] = registered
            else:
                own = _methods([refusal.when] if refusal.when else [])
                values = own if own is not None else _reached(name, callers, set())
                if values is not None:
                    entry["values"] = values
            out.append(entry)
    return out


PROPOSER_BUILDER = "build_specdecode_proposer"
_METHOD_TEST = re.compile(r"\bmethod\s*==\s*['\"](\w+)['\"]|\bmethod\s+in\s+[(\[]([^)\]]*)[)\]]")


def _engine_functions(tree: EngineTree) -> dict[str, tuple[str, ast.FunctionDef]]:
    """The engine's functions on the speculative path: the config builder, SpecDecodeConfig.from_config, every function
    of the DFlash validators' module, the proposer registry's builder (each found by what it defines)."""
    out: dict[str, tuple[str, ast.FunctionDef]] = {}
    for relpath in tree.grep(b"def build_specdecode_config", under="lmdeploy/pytorch"):
        module = safe_parse(tree, relpath)
        for node in ast.walk(module) if module else ():
            if isinstance(node, ast.FunctionDef) and node.name == "build_specdecode_config":
                out[node.name] = (relpath, node)
    for relpath in tree.grep(b"class SpecDecodeConfig", under="lmdeploy/pytorch"):
        module = safe_parse(tree, relpath)
        for cls in (n for n in module.body if isinstance(n, ast.ClassDef) and n.name == "SpecDecodeConfig") if module else ():
            for node in (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "from_config"):
                out[node.name] = (relpath, node)
    validators = set(tree.grep(b"def validate_dflash", under=SPEC_DECODE))  # every function of their module
    for relpath in sorted(validators | set(tree.grep(b"def " + PROPOSER_BUILDER.encode(), under=SPEC_DECODE))):
        module = safe_parse(tree, relpath)
        for node in module.body if module else ():
            if isinstance(node, ast.FunctionDef) and (relpath in validators or node.name == PROPOSER_BUILDER):
                out[node.name] = (relpath, node)
    return out


def _with_tests(node: ast.AST, tests: tuple[str, ...] = ()) -> list[tuple[ast.AST, list[str]]]:
    """Every node under `node` with the `if` tests (taken, as written) it sits under; an else branch adds none."""
    out: list[tuple[ast.AST, list[str]]] = []
    for child in ast.iter_child_nodes(node):
        out += _with_tests_one(child, tests)
    return out


def _with_tests_one(node: ast.AST, tests: tuple[str, ...]) -> list[tuple[ast.AST, list[str]]]:
    out: list[tuple[ast.AST, list[str]]] = [(node, list(tests))]
    if isinstance(node, ast.If):
        out += _with_tests(node.test, tests)
        for stmt in node.body:
            out += _with_tests_one(stmt, (*tests, ast.unparse(node.test)))
        for stmt in node.orelse:
            out += _with_tests_one(stmt, tests)
        return out
    return out + _with_tests(node, tests)


def _methods(tests: list[str]) -> list[str] | None:
    """The methods `method == 'x'` / `method in ('x', 'y')` in the tests pin (None: the tests name none)."""
    found: list[str] = []
    for test in tests:
        for single, several in _METHOD_TEST.findall(test):
            found += [single] if single else re.findall(r"['\"](\w+)['\"]", several)
    return sorted(set(found)) if found else None


def _reached(name: str, callers: dict[str, list[tuple[str, list[str] | None]]], seen: set[str]) -> list[str] | None:
    """The methods on whose path a function is called: its call sites' tests, else its callers' (None: any method)."""
    if name in seen or name not in callers:
        return None
    seen = seen | {name}
    found: set[str] = set()
    for caller, methods_at in callers[name]:
        values = methods_at if methods_at is not None else _reached(caller, callers, seen)
        if values is None:
            return None
        found.update(values)
    return sorted(found)
