"""vLLM's rules on the draft's tensor parallel size, as SpeculativeConfig states them: each `if` in its methods whose
test reads the draft TP (`draft_tensor_parallel_size`, the `speculative_draft_tensor_parallel_size` argument of
`_verify_and_get_draft_tp`) or the misnamed `tensor_parallel_size` key, with what it does (refuse: it raises;
adjust: it sets the draft TP), its message and file:line (probes/_rules.py). The conditions stay source text:
checks/_rules.py evaluates them on a launch line (`target_parallel_config.tensor_parallel_size` is the line's -tp).
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes._rules import start_up_rules
from compat.probes.vllm._common import speculative_config_class
from compat.core.tree import EngineTree

DRAFT_TP = ("draft_tensor_parallel_size", "speculative_draft_tensor_parallel_size", "tensor_parallel_size")


@probe("vllm", "draft_parallel_rules", "Rules on the draft's tensor parallel size (SpeculativeConfig)", order=86)
def draft_parallel_rules(tree: EngineTree) -> dict:
    found = speculative_config_class(tree)
    if found is None:
        return {"present": False, "reason": "no class SpeculativeConfig"}
    relpath, cls = found
    rules = []
    for func in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        for rule in start_up_rules(tree, relpath, func, DRAFT_TP):  # type: ignore[arg-type]
            if any("parallel_size" in c for c in rule["when"][-1:]):
                rules.append({**rule, "function": func.name})
    return {"present": True, "location": tree.loc(relpath, cls), "rules": rules}
