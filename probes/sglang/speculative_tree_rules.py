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
from compat.probes._rules import start_up_rules
from compat.core.tree import EngineTree

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
    return start_up_rules(tree, relpath, func, TREE_FIELDS)


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
