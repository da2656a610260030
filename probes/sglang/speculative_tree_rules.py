"""SGLang's rules on the draft tree (--speculative-num-steps, --speculative-eagle-topk, --speculative-num-draft-tokens)
as its EAGLE start-up code states them: each `if`/`assert` there whose test reads one of those settings, with the
tests of the `if`s around it, what it does (refuse: raise/assert; adjust: it rewrites a setting and warns), its
message and file:line. The code is found by what it does (the function holding the rule that resets the draft
tokens to steps + 1 when topk is 1): ServerArgs._handle_speculative_decoding up to 0.5.15, arg_groups/
speculative_hook.py's _handle_eagle_family from 0.5.16. The environment switches the conditions read
(`envs.SGLANG_ENABLE_SPEC_V2.get()`) come with their defaults from sglang/srt/environ.py.

The conditions are kept as source text; checks/_rules.py evaluates them on a launch line's values.
"""

from __future__ import annotations

import ast
import re

from compat.probes import probe
from compat.probes._ast import unparse
from compat.tree import EngineTree

HOMES = ("sglang/srt/server_args.py", "sglang/srt/arg_groups/speculative_hook.py")
TREE_FIELDS = ("speculative_eagle_topk", "speculative_num_draft_tokens", "speculative_num_steps")
ANCHOR = b"speculative_num_steps + 1"
ENV_HOME = "sglang/srt/environ.py"


@probe("sglang", "speculative_tree_rules", "Rules on steps / topk / draft tokens (EAGLE start-up)", order=36)
def speculative_tree_rules(tree: EngineTree) -> dict:
    homes = [h for h in HOMES if tree.exists(h) and ANCHOR in tree.read_bytes(h)]
    homes += [p for p in tree.files("sglang/srt/arg_groups") if p not in homes and ANCHOR in tree.read_bytes(p)]
    for relpath in homes:
        func = _handler(tree.parse(relpath))
        if func is not None:
            rules = _rules(tree, relpath, func)
            return {"present": True, "location": tree.loc(relpath, func), "function": func.name, "rules": rules,
                    "env_defaults": _env_defaults(tree, rules)}
    return {"present": False, "reason": "no EAGLE start-up code resetting the draft tokens to steps + 1 found"}


def _handler(module: ast.Module) -> ast.FunctionDef | None:
    """The function holding `if topk == 1 and draft_tokens != steps + 1` (the EAGLE settings handler)."""
    for func in (n for n in ast.walk(module) if isinstance(n, ast.FunctionDef)):
        for node in ast.walk(func):
            if isinstance(node, ast.If) and "speculative_num_steps + 1" in (unparse(node.test) or ""):
                if "speculative_eagle_topk == 1" in (unparse(node.test) or ""):
                    return func
    return None


def _rules(tree: EngineTree, relpath: str, func: ast.FunctionDef) -> list[dict]:
    out: list[dict] = []

    def visit(body: list[ast.stmt], around: list[str]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Assert) and _reads_tree(stmt.test):
                out.append(_rule("refuse", around + [unparse(stmt.test) or ""], _message(stmt.msg) or
                                 f"AssertionError: assert {unparse(stmt.test)}", tree.loc(relpath, stmt), negate=True))
            if isinstance(stmt, ast.If):
                test = unparse(stmt.test) or ""
                if _reads_tree(stmt.test):
                    kind, message = _outcome(stmt.body)
                    if kind:
                        out.append(_rule(kind, around + [test], message, tree.loc(relpath, stmt)))
                visit(stmt.body, around + [test])
                visit(stmt.orelse, around + [f"not ({test})"])
            elif isinstance(stmt, (ast.For, ast.With, ast.Try)):
                visit(stmt.body, around)

    visit(func.body, [])
    return out


def _rule(kind: str, conditions: list[str], message: str | None, location: str, negate: bool = False) -> dict:
    rule = {"kind": kind, "when": conditions, "message": message, "location": location}
    if negate:
        rule["fails_unless_last"] = True  # an assert: it refuses when its own test is false
    return rule


def _reads_tree(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in TREE_FIELDS for n in ast.walk(node))


def _outcome(body: list[ast.stmt]) -> tuple[str | None, str | None]:
    """("refuse", message) when the block raises, ("adjust", warning) when it rewrites a draft-tree setting."""
    for stmt in body:
        if isinstance(stmt, ast.Raise):
            call = stmt.exc if isinstance(stmt.exc, ast.Call) else None
            text = _message(call.args[0]) if call is not None and call.args else None
            name = unparse(call.func) if call is not None else unparse(stmt.exc)
            return "refuse", f"{name}: {text}" if text else name
    sets = any(isinstance(n, (ast.Assign, ast.keyword)) and _assigns_tree(n) for s in body for n in ast.walk(s))
    if sets:
        warning = next((_message(n.args[0]) for s in body for n in ast.walk(s) if isinstance(n, ast.Call)
                        and unparse(n.func) in ("logger.warning", "logger.info", "warnings.warn") and n.args), None)
        return "adjust", warning
    return None, None


def _assigns_tree(node: ast.AST) -> bool:
    if isinstance(node, ast.keyword):
        return node.arg in TREE_FIELDS
    return any(isinstance(t, ast.Attribute) and t.attr in TREE_FIELDS for t in node.targets)  # type: ignore[attr-defined]


def _message(node: ast.AST | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{" + (unparse(v.value) or "") + "}"  # type: ignore[attr-defined]
                       for v in node.values)
    return unparse(node)


def _env_defaults(tree: EngineTree, rules: list[dict]) -> dict[str, dict]:
    """`envs.NAME.get()` in the conditions -> {NAME: {"default": value, "location": ...}} from environ.py."""
    names = sorted({m for r in rules for c in r["when"] for m in re.findall(r"envs\.(\w+)\.get\(\)", c)})
    if not names or not tree.exists(ENV_HOME):
        return {}
    text = tree.read_bytes(ENV_HOME).decode("utf-8", "replace")
    out = {}
    for name in names:
        m = re.search(rf"^\s*{name}\s*=\s*Env\w*\(([^)]*)\)", text, re.M)
        if m:
            try:
                default = ast.literal_eval(m.group(1).split(",")[0].strip() or "None")
            except (ValueError, SyntaxError):
                default = m.group(1)
            out[name] = {"default": default, "location": f"{ENV_HOME}:{text.count(chr(10), 0, m.start()) + 1}"}
    return out
