"""The code SGLang runs on its server arguments when they are built (`ServerArgs.__post_init__` and the handlers it
calls, whatever a release names them: inline in __post_init__, `_handle_speculative_decoding`, or a module function
handed the arguments, `handle_speculative_decoding(server_args)` of arg_groups/speculative_hook.py), as statements
doctor walks with the line's values (compat/guards/).

Read whole: __post_init__, every handler that speaks of speculative decoding, and every short function they call;
a long handler of something else is kept as what it assigns (unknown after it runs). The fields' defaults are
ServerArgs' own (dataclass fields, annotated fields); the environment switches the code reads (`envs.X.get()`) with
the defaults environ.py declares. Releases that build ServerArgs through the msgspec namespaces and the resolution
pipeline (0.5.20+) are not read yet: the fact says so, and doctor says it cannot tell.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes._ast import find_def, literal
from compat.probes._validation import Program, effects, size
from compat.probes.sglang._server_args import SPEC_WORDS, every_flag, module_constant

ENVIRON = "sglang/srt/environ.py"
SHORT = 60  # statements: a handler this short is read whole whatever it is about
SETTER_LIMIT = 600  # statements: a handler that sets what the speculative one reads is read up to this long
_ENV_FIELD = re.compile(rb"^\s+([A-Z][A-Z0-9_]+)\s*=\s*(Env\w+)\((.*)\)\s*$", re.M)


@probe("sglang", "spec_validation", "The server arguments' validation, as statements (doctor evaluates them)", order=88)
def spec_validation(tree: EngineTree) -> dict:
    source = every_flag(tree)
    if source is None:
        return {"present": False, "reason": "no class ServerArgs in sglang/srt"}
    if source.namespaces:
        return {"present": False, "reason": "ServerArgs is built from msgspec namespaces through the resolution pipeline "
                "(arg_groups/): not read yet", "location": tree.loc(source.relpath, source.line)}
    relpath = source.relpath
    post = find_def(tree, relpath, "__post_init__")
    if post is None:
        return {"present": False, "reason": f"no ServerArgs.__post_init__ in {relpath}"}
    program = Program(tree, lambda where, name: _constant(tree, where, name))
    program.add_lazy_class("ServerArgs", relpath)
    dispatcher = _dispatcher(program, post)
    # the speculative handlers first (and the short helpers they call): what they read is what the other handlers
    # are read for
    program.inline = lambda key, fn: any(word in key.lower() for word in SPEC_WORDS) or size(fn) <= SHORT
    for call in (n for n in ast.walk(dispatcher) if isinstance(n, ast.Call)):
        name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id if isinstance(call.func, ast.Name) else ""
        if any(word in name.lower() for word in SPEC_WORDS):
            found = program.called(relpath, dispatcher, call, "ServerArgs")
            if found is not None:
                where, key, node, receiver = found
                program.function(where, node, key, "ServerArgs" if receiver is None else None, whole=True,
                                 receiver=receiver)
    if not program.functions and "speculative" not in ast.unparse(dispatcher):
        return {"present": False, "reason": "no handler of the speculative settings is called where ServerArgs is "
                "built (__post_init__ and the dispatcher it calls): a resolution pipeline, not read yet",
                "location": tree.loc(relpath, post)}
    wanted = _read(program)
    speculative = set(program.functions)
    program.inline = lambda key, fn: _worth_reading(key, fn, wanted)
    program.max_statements = SETTER_LIMIT  # a model-specific handler that sets a field for some models: read it all
    program.function(relpath, post, "ServerArgs.__post_init__", "ServerArgs", whole=True)
    for key, function in program.functions.items():
        # a handler of other settings is read for what it sets; a raise in it counts only where the line reaches it
        if key not in speculative and key not in ("ServerArgs.__post_init__", f"ServerArgs.{dispatcher.name}") \
                and function.get("body") is not None:
            function["quiet"] = True
    if not program.functions["ServerArgs.__post_init__"].get("body"):  # construction only: a pipeline resolves it later
        return {"present": False, "reason": "ServerArgs is resolved by a pipeline run after construction (arg_groups/, "
                "resolve_once): not read yet", "location": tree.loc(relpath, post)}
    read = _read(program)
    fields = {}
    for decl in source.fields:
        if decl.name in read and decl.namespace is None:
            entry: dict[str, Any] = {"line": decl.node.lineno}
            default = decl.default
            entry["default"] = default if _plain(default, decl) else {"expr": ast.unparse(decl.node.value)} \
                if decl.node.value is not None else None
            fields[decl.name] = entry
    out: dict[str, Any] = {"present": True, "location": tree.loc(relpath, source.line), "entry": None,
                           "server_class": "ServerArgs",
                           "classes": [{"name": "ServerArgs", "file": relpath, "line": source.line, "fields": fields,
                                        "construction": ["ServerArgs.__post_init__"], "closed": True}],
                           "envs": _env_defaults(tree, read)}
    read_back = program.to_json()
    out["classes"] += [c for c in read_back.pop("classes") if c["name"] != "ServerArgs"]
    out.update(read_back)
    return out


def _dispatcher(program: Program, post: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """The method that runs the handlers: __post_init__, or the one method it only calls (`_run_resolution_pipeline`)."""
    for _ in range(2):
        body = [s for s in post.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        call = body[0].value if len(body) == 1 and isinstance(body[0], ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                and call.func.value.id == "self"):
            break
        found = program.method_node("ServerArgs", call.func.attr)
        if found is None:
            break
        post = found[1]
    return post


def _worth_reading(key: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, wanted: set[str]) -> bool:
    """A handler of speculative decoding, or one that sets what the speculative handlers read (read whole up to the
    reader's limit: a handler that sets a field for some models only must not leave it unknown for all)."""
    if any(word in key.lower() for word in SPEC_WORDS):
        return True
    sets = {e.partition(".")[2] for e in effects(fn, fn.args.args[0].arg if fn.args.args else "self")}
    return bool(sets & wanted) or (size(fn) <= SHORT and "*" in sets)


def _read(program: Program) -> set[str]:
    """The attribute names the program reads: `.x`, and the names getattr/hasattr are given as strings."""
    text = json.dumps([f.get("body") for f in program.functions.values()])
    return set(re.findall(r"\.(\w+)", text)) | set(re.findall(r"""['"]([a-z_]\w*)['"]""", text.replace('\\"', '"')))


def _plain(value: Any, decl) -> bool:
    """A default the reader could evaluate (a literal, simple arithmetic), not the source text of an expression."""
    node = decl.node.value
    if node is None:
        return False
    return isinstance(node, ast.Constant) or not (isinstance(value, str) and value == ast.unparse(node))


def _env_defaults(tree: EngineTree, read: set[str]) -> dict[str, dict]:
    """NAME -> {"kind", "default", "location"} of the environment switches environ.py declares and the code reads."""
    if not tree.exists(ENVIRON):
        return {}
    data = tree.read_bytes(ENVIRON)
    out: dict[str, dict] = {}
    for m in _ENV_FIELD.finditer(data):
        name = m.group(1).decode()
        if name not in read:
            continue
        try:
            default = literal(ast.parse(m.group(3).decode() or "None", mode="eval").body)
        except SyntaxError:
            continue
        out[name] = {"kind": m.group(2).decode(), "default": default,
                     "location": tree.loc(ENVIRON, data.count(b"\n", 0, m.start(1)) + 1)}
    return out


def _constant(tree: EngineTree, relpath: str, name: str) -> tuple[Any, str] | None:
    if not name.lstrip("_")[:1].isupper():  # a constant is named in capitals; anything else is no literal to look up
        return None
    value = module_constant(tree, relpath, name)
    if value is None or (isinstance(value, str) and not name.isupper()):
        return None
    if isinstance(value, (set, frozenset, tuple)):
        value = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
    return value, relpath
