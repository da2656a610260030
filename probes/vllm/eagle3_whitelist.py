"""The config-time EAGLE-3 target whitelist: which target `model_type`s `SpeculativeConfig`
accepts for eagle3 (0.10.0-0.21.0), and how it matches them.

Found by shape, not by name: an `if` in a SpeculativeConfig method (`_verify_args`) that tests
`...hf_text_config.model_type` against a list and raises. It was an inline `"llama" not in ...`
in 0.10.0, `eagle3_target_supported` in 0.10.1-0.16.0 and `aux_hidden_states_supported` in
0.17.0-0.21.0; from 0.22.0 there is no config-time check and targets are refused only at load
time when `supports_eagle3(model)` fails.
"""

from __future__ import annotations

import ast
import io
import tokenize

from compat.probes import probe
from compat.probes._ast import find_def, literal, methods, source_segment, unparse
from compat.probes.vllm._common import speculative_config_class
from compat.core.tree import EngineTree

TESTED_SUFFIX = "model_type"
RUNNER_DIR = "vllm/v1/worker"
# The v1 and v2 model runners' homes; other files of RUNNER_DIR are searched only if neither has the check.
RUNNER_HOMES = ("vllm/v1/worker/gpu_model_runner.py", "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py")


@probe("vllm", "eagle3_whitelist", "EAGLE-3 target model_type whitelist (config time)", order=40)
def eagle3_whitelist(tree: EngineTree) -> dict:
    found = speculative_config_class(tree)
    if found is None:
        return {"present": False, "reason": "no class SpeculativeConfig in vllm/"}
    relpath, cls = found
    funcs = methods(cls)
    # _verify_args first (its home in every release that has the check), then the other methods;
    # only methods whose text mentions model_type and raises are walked (the class is long).
    lines = tree.text(relpath).split("\n")
    ordered = [funcs["_verify_args"]] if "_verify_args" in funcs else []
    ordered += [f for name, f in funcs.items() if name != "_verify_args"]
    for func in ordered:
        text = "\n".join(lines[func.lineno - 1:func.end_lineno])
        if TESTED_SUFFIX not in text or "raise" not in text:
            continue
        for node in ast.walk(func):
            # A gate raises; an `if` that only rewrites a model_type (hf_config_override) is not one.
            if isinstance(node, ast.If) and any(isinstance(n, ast.Raise) for b in node.body for n in ast.walk(b)):
                check = _whitelist_check(node.test)
                # About the target, for some methods: not a draft-config sanity check
                # (`hf_config.model_type in (...)` in hf_config_override raises too).
                if check is not None and ("target" in unparse(check["tested"]) or _methods_gated(node.test)):
                    return _describe(tree, relpath, cls, func, node, check)
    load_time = _load_time_checks(tree)
    return {
        "present": False,
        "reason": "no config-time model-type check in SpeculativeConfig; targets are gated at load time by supports_eagle3()",
        # Where the gate is now (the v1 runner's check first), else the class that was searched.
        "location": load_time[0]["location"] if load_time else tree.loc(relpath, cls),
        "checked": tree.loc(relpath, cls),
        "load_time_checks": load_time,
    }


def _is_model_type(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == TESTED_SUFFIX


def _whitelist_check(test: ast.AST) -> dict | None:
    """What a condition tests about the target's model_type, or None if it is not such a test."""
    for node in ast.walk(test):
        # inline: `"llama" not in x.model_type`
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and _is_model_type(node.comparators[0]):
            if isinstance(node.left, ast.Constant) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
                return {"kind": "inline", "values": [node.left.value], "tested": node.comparators[0], "match": "substring"}
        # `x.model_type in LIST` / `not in LIST`
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and _is_model_type(node.left):
            if isinstance(node.ops[0], (ast.In, ast.NotIn)):
                return {"kind": "list", "list": node.comparators[0], "tested": node.left, "match": "exact"}
        # `any(s in x.model_type for s in LIST)`
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("any", "all") and node.args:
            gen = node.args[0]
            if isinstance(gen, (ast.GeneratorExp, ast.ListComp)) and len(gen.generators) == 1:
                elt, comp = gen.elt, gen.generators[0]
                if (
                    isinstance(elt, ast.Compare) and len(elt.ops) == 1 and isinstance(elt.ops[0], ast.In)
                    and _is_model_type(elt.comparators[0])
                ):
                    return {"kind": "list", "list": comp.iter, "tested": elt.comparators[0], "match": "substring"}
                if isinstance(elt, ast.Call) and isinstance(elt.func, ast.Attribute) and _is_model_type(elt.func.value):
                    match = {"startswith": "prefix", "endswith": "suffix"}.get(elt.func.attr)
                    if match:
                        return {"kind": "list", "list": comp.iter, "tested": elt.func.value, "match": match}
    return None


def _describe(tree: EngineTree, relpath: str, cls: ast.ClassDef, func: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.If, check: dict) -> dict:
    raise_node = next((n for n in ast.walk(node) if isinstance(n, ast.Raise)), None)
    # The site is the raise the user sees in the traceback; the condition is where the list is tested.
    out: dict = {"present": True, "location": tree.loc(relpath, raise_node or node), "condition_location": tree.loc(relpath, node),
                 "function": f"{cls.name}.{func.name}", "load_time_checks": _load_time_checks(tree)}
    if check["kind"] == "inline":
        out.update(variable=None, model_types=check["values"], list_location=tree.loc(relpath, node))
    else:
        target = check["list"]
        if isinstance(target, ast.Name):
            assign = _assignment_before(func, target.id, node.lineno) or _assignment_before(cls, target.id, node.lineno)
            values = literal(assign.value) if assign is not None else None
            out.update(
                variable=target.id,
                model_types=list(values) if isinstance(values, (list, tuple, set)) else values,
                list_location=tree.loc(relpath, assign) if assign is not None else None,
            )
        else:  # a literal list written in the condition
            values = literal(target)
            out.update(variable=None, model_types=list(values) if isinstance(values, (list, tuple)) else values,
                       list_location=tree.loc(relpath, target))
    out["match"] = check["match"]
    out["tested"] = unparse(check["tested"])
    out["methods_gated"] = _methods_gated(node.test)
    message = None
    if raise_node is not None and isinstance(raise_node.exc, ast.Call) and raise_node.exc.args:
        message = _string_source(source_segment(tree, relpath, raise_node.exc.args[0]))
    out["raises"] = unparse(raise_node.exc.func) if raise_node is not None and isinstance(raise_node.exc, ast.Call) else None
    out["error_text"] = message
    return out


def _assignment_before(scope: ast.AST, name: str, before_line: int) -> ast.Assign | ast.AnnAssign | None:
    """The last `name = ...` in `scope` above `before_line`."""
    best: ast.Assign | ast.AnnAssign | None = None
    for sub in ast.walk(scope):
        if not isinstance(sub, (ast.Assign, ast.AnnAssign)):
            continue
        targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target] if sub.value else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and sub.lineno < before_line:
            if best is None or sub.lineno > best.lineno:
                best = sub
    return best


def _methods_gated(test: ast.AST) -> list[str]:
    """The `method` values the check applies to: `self.method == "eagle3"` or `self.method in (...)`."""
    out: list[str] = []
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left = node.left
            if isinstance(left, ast.Attribute) and left.attr == "method":
                value = literal(node.comparators[0])
                if isinstance(node.ops[0], ast.Eq) and isinstance(value, str):
                    out.append(value)
                elif isinstance(node.ops[0], ast.In) and isinstance(value, (list, tuple, set)):
                    out.extend(v for v in value if isinstance(v, str))
    return list(dict.fromkeys(out))


def _load_time_checks(tree: EngineTree) -> list[dict]:
    """Where the runners refuse a target without the EAGLE-3 interface: the raise under `if not supports_eagle3(...)`
    (from 0.1x) or in the `else:` of `if supports_eagle3(...)` (0.10-0.11); its location, and the condition's line
    as condition_location, in every release that has it."""
    out = []
    needle = b"supports_eagle3("
    usual = [p for p in RUNNER_HOMES if tree.exists(p) and needle in tree.read_bytes(p)]
    for relpath in usual or tree.grep(needle, under=RUNNER_DIR):
        for func in ast.walk(tree.parse(relpath)):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if not (isinstance(node, ast.If) and "supports_eagle3(" in unparse(node.test)):
                    continue
                branch = node.body if unparse(node.test).startswith("not ") else node.orelse
                raised = next((n for b in branch for n in ast.walk(b) if isinstance(n, ast.Raise)), None)
                if raised is not None:
                    out.append({"function": func.name, "location": tree.loc(relpath, raised),
                                "condition_location": tree.loc(relpath, node)})
        if out:
            break
    return out


def _string_source(segment: str | None) -> str | None:
    """The string literals of a message as written, joined on one line (comments dropped):
    `f"... {eagle3_target_supported} models. " f"Got {...model_type=}"`."""
    if segment is None:
        return None
    try:
        tokens = [t.string for t in tokenize.generate_tokens(io.StringIO(segment).readline) if t.type == tokenize.STRING]
    except (tokenize.TokenError, SyntaxError):
        return segment
    return " ".join(tokens) if tokens else segment
