"""SGLang has no EAGLE-3 target whitelist; this probe says so and lists the guards that do reject.

vLLM keeps a model-type list ("Eagle3 is only supported for [...] models"). SGLang gates a
target by capability (its class has `set_eagle3_layers_to_capture`, else AttributeError)
and a drafter by registry name. What is looked for, by what it is: `raise` statements
whose condition or message ties EAGLE3 to an architecture, a model type or the capture
hook, in the argument hooks, the speculative package, the executor and the model files
that define the hook or a drafter. The list is reported as `guards`; a model-type list
among them would make `present` true.
"""

from __future__ import annotations

import ast
from typing import cast

from compat.probes import probe
from compat.probes.sglang._models import CAPTURE_METHOD, MODELS_DIR, capture_methods, is_eagle3_drafter_name, models_index
from compat.probes.sglang._source import enclosing_def_start, enclosing_if_start, parse_block
from compat.core.tree import EngineTree

REASON = "SGLang has no model-type whitelist; a target needs set_eagle3_layers_to_capture (AttributeError otherwise)"
SEARCHED = ("sglang/srt/server_args.py", "sglang/srt/arg_groups", "sglang/srt/speculative", "sglang/srt/model_executor")
_EAGLE3_SPELLINGS = (b"eagle3", b"EAGLE3", b"Eagle3", b"EAGLE-3", b"Eagle-3")


def _mentions_eagle3(data: bytes) -> bool:
    return any(s in data for s in _EAGLE3_SPELLINGS)  # plain byte search: a regex with re.I is 10x slower
_ARCH_WORDS = ("architecture", "model_type", "model_arch", "hf_config")


def _guard_files(tree: EngineTree) -> list[str]:
    files = []
    for place in SEARCHED:
        files.extend(tree.files(place) if not place.endswith(".py") else [place] if tree.exists(place) else [])
    models = {relpath for relpath, _ in capture_methods(tree)}
    index = models_index(tree)
    models.update(f for name, (f, _) in index.registered.items() if is_eagle3_drafter_name(name, f))
    return files + sorted(models)


def _message(exc: ast.AST | None) -> str | None:
    if isinstance(exc, ast.Call) and exc.args:
        arg = exc.args[0]
        if isinstance(arg, ast.Constant):
            return str(arg.value)
        if isinstance(arg, ast.JoinedStr):
            return "".join(str(v.value) if isinstance(v, ast.Constant) else "{" + ast.unparse(cast(ast.FormattedValue, v).value) + "}"
                           for v in arg.values)  # an f-string's parts are str constants and formatted values
        return ast.unparse(arg)
    return ast.unparse(exc) if exc is not None else None


def _guards_in(tree: EngineTree, relpath: str) -> list[dict]:
    data = tree.read_bytes(relpath)
    if b"raise " not in data or not _mentions_eagle3(data):
        return []
    out, seen = [], set()
    pos = data.find(b"raise ")
    while pos >= 0:
        if _mentions_eagle3(data[max(0, pos - 400):pos + 400]):
            # parse the `if` that governs the raise, or else the whole function around it
            start = enclosing_if_start(data, pos)
            start = start if start is not None else enclosing_def_start(data, pos)
            if start is not None and start not in seen:
                seen.add(start)
                node = parse_block(tree, relpath, start)
                if node is not None:
                    out.extend(_raises(tree, relpath, node, _function_name(data, pos)))
        pos = data.find(b"raise ", pos + 1)
    return out


def _function_name(data: bytes, offset: int) -> str | None:
    start = enclosing_def_start(data, offset)
    if start is None:
        return None
    words = data[start:data.find(b"(", start)].split()
    return words[-1].decode() if words else None


def _raises(tree: EngineTree, relpath: str, block: ast.AST, function: str | None) -> list[dict]:
    out = []
    parents = {child: parent for parent in ast.walk(block) for child in ast.iter_child_nodes(parent)}
    for node in ast.walk(block):
        if not isinstance(node, ast.Raise):
            continue
        test: ast.expr | None = None
        child: ast.AST = node
        while child in parents:
            parent = parents[child]
            if isinstance(parent, ast.If):
                test = parent.test if child is not parent.test else None
                break
            child = parent
        condition = ast.unparse(test) if test is not None else None
        message = _message(node.exc) or ""
        text = f"{condition or ''} {message}"
        if not _mentions_eagle3(text.encode()):
            continue
        low = text.lower()
        if "hasattr" in low and CAPTURE_METHOD in text:
            kind = "capability"
        elif any(word in low for word in _ARCH_WORDS):
            kind = "model_type" if "model_type" in low else "architecture"
        elif is_eagle3_drafter_name("", relpath) and relpath.startswith(MODELS_DIR):
            kind = "drafter_config"
        else:
            continue  # algorithm-level validation (LoRA, PP, backends), not a gate on the model
        out.append({"kind": kind, "condition": condition, "error": message, "function": function,
                    "location": tree.loc(relpath, node)})
    return out


@probe("sglang", "eagle3_whitelist", "EAGLE-3 target whitelist", order=40)
def eagle3_whitelist(tree: EngineTree) -> dict:
    guards, seen = [], set()
    for relpath in _guard_files(tree):
        for guard in _guards_in(tree, relpath):
            if guard["location"] not in seen:  # a raise found from its `if` and from its function
                seen.add(guard["location"])
                guards.append(guard)
    model_type_lists = [g for g in guards if g["kind"] == "model_type"]
    if model_type_lists:
        return {"present": True, "location": model_type_lists[0]["location"], "guards": guards}
    return {"present": False, "reason": REASON, "guards": guards}
