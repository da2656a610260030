"""SGLang's server-info endpoint: its path(s), how the server arguments and the scheduler's internal states
appear in its answer, and the field that carries the average acceptance length.

`/get_server_info` exists from the first releases; 0.5.x adds `/server_info` and deprecates the old path.
The answer spreads the server arguments at the top level (`speculative_algorithm`, ...), carries the
release's `version`, and the scheduler's internal state: merged at the top level (0.4.4-0.4.5) or as a list
per data-parallel rank under `internal_states` (later). The scheduler puts `avg_spec_accept_length` there:
the accepted tokens (bonus included) per verify step, averaged since the server started or its counters were
last reset (a cumulative figure, not a window).

    {"present": true, "paths": [{"path": "/get_server_info", "location"}, {"path": "/server_info", ...}],
     "preferred_path": "/server_info", "version_key": "version", "internal_states": "list" | "merged",
     "internal_states_key": "internal_states" | null, "server_args": "spread" | null,
     "accept_length_key": "avg_spec_accept_length", "accept_length_location": "file:line"}
"""

from __future__ import annotations

import ast
import re

from compat.probes import probe
from compat.probes.sglang._source import enclosing_def_start, parse_block
from compat.core.tree import EngineTree

UNDER = "sglang/srt"
ACCEPT = b"accept_length\"]"


@probe("sglang", "server_info", "The server-info endpoint (version, settings, average acceptance length)", order=82)
def server_info(tree: EngineTree) -> dict:
    routes: list[tuple[str, str, ast.AsyncFunctionDef | ast.FunctionDef]] = []
    for relpath in tree.grep(b"server_info\"", under=f"{UNDER}/entrypoints"):
        for node in ast.walk(tree.parse(relpath)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                routes += [(path, relpath, node) for path in _get_paths(node) if path.endswith("server_info")]
    if not routes:
        return {"present": False, "reason": f"no GET route ending in server_info under {UNDER}/entrypoints"}
    out: dict = {"present": True, "paths": [{"path": p, "location": tree.loc(r, n)} for p, r, n in routes]}
    answering = [(p, r, n) for p, r, n in routes if _answer(n) is not None]
    preferred = next((x for x in answering if x[0] == "/server_info"), answering[0] if answering else routes[0])
    out["preferred_path"] = preferred[0]
    out["location"] = tree.loc(preferred[1], preferred[2])
    out.update(_shape(_answer(preferred[2])))
    out.update(_accept_field(tree))
    return out


def _get_paths(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    paths = []
    for dec in func.decorator_list:
        if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr in ("get", "api_route"):
            paths += [a.value for a in dec.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return paths


def _answer(func: ast.AST) -> ast.Dict | None:
    """The dict literal the route returns (None when it only delegates to another route)."""
    dicts = [n for n in ast.walk(func) if isinstance(n, ast.Dict) and len(n.keys) >= 2]
    return max(dicts, key=lambda d: len(d.keys)) if dicts else None


def _shape(answer: ast.Dict | None) -> dict:
    if answer is None:
        return {"version_key": None, "internal_states": None, "internal_states_key": None, "server_args": None}
    keys = {k.value: v for k, v in zip(answer.keys, answer.values) if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    spreads = [ast.unparse(v) for k, v in zip(answer.keys, answer.values) if k is None]
    states_key = next((k for k in keys if "internal_state" in k), None)
    merged = any("internal_state" in s for s in spreads)
    return {"version_key": "version" if "version" in keys else None,
            "internal_states": "list" if states_key else "merged" if merged else None,
            "internal_states_key": states_key,
            "server_args": "spread" if any("server_args" in s or "server_info" in s for s in spreads) else None}


def _accept_field(tree: EngineTree) -> dict:
    """`ret["avg_spec_accept_length"] = ...` in the function that builds the scheduler's internal state (its
    name or its file says so): the key and where. A per-request `meta_info[...]` is another figure."""
    found: list[tuple[bool, str, str]] = []
    managers = tree.files(f"{UNDER}/managers")
    likely = [f for f in managers if ("scheduler" in f or "internal_state" in f) and ACCEPT in tree.read_bytes(f)]
    for relpath in likely or [f for f in managers if ACCEPT in tree.read_bytes(f)]:
        data = tree.read_bytes(relpath)
        for m in re.finditer(rb'\[\s*"(\w*accept_length)"\s*\]\s*=[^=]', data):
            start = enclosing_def_start(data, m.start())
            func = parse_block(tree, relpath, start) if start is not None else None
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript)
                        and ast.unparse(node.targets[0].slice).strip("'\"") == m.group(1).decode()
                        and "meta_info" not in ast.unparse(node.targets[0].value)):
                    internal = "internal_state" in func.name or "internal_state" in relpath
                    found.append((not internal, m.group(1).decode(), tree.loc(relpath, node)))
                    break
    if not found:
        return {"accept_length_key": None, "accept_length_location": None}
    _, key, location = min(found)
    return {"accept_length_key": key, "accept_length_location": location}
