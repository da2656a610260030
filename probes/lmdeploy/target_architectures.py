"""Every architecture LMDeploy's PyTorch engine builds a class for: the keys of MODULE_MAP
(lmdeploy/pytorch/models/module_map.py), which `_get_model_class` (lmdeploy/pytorch/models/patch.py) looks the
target's `architectures` up in, after its `auto_map['AutoModelForCausalLM']` when the config has one. An architecture
not in the map fails at model build with `RuntimeError: Can not found rewrite for architectures: [...]`; one in
REMOVED_MODEL_MAP (0.15.0+) with `... support has been removed from LMDeploy`, and is left out here.

JSON: {"Architecture": "lmdeploy/pytorch/models/module_map.py:LINE", ...}
"""

from __future__ import annotations

import ast

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes._ast import safe_parse
from compat.probes.lmdeploy._source import MODELS, module_map, string

REMOVED = "REMOVED_MODEL_MAP"


@probe("lmdeploy", "target_architectures", "Architectures the PyTorch engine's model map builds", order=90)
def target_architectures(tree: EngineTree) -> dict[str, str]:
    removed = removed_architectures(tree)
    return {arch: tree.loc(m.relpath, m.line) for arch, m in sorted(module_map(tree).items()) if arch not in removed}


def removed_architectures(tree: EngineTree) -> set[str]:
    """The keys of `REMOVED_MODEL_MAP = {'InternLMForCausalLM': 'InternLM', ...}`: refused by name."""
    out: set[str] = set()
    for relpath in tree.grep(REMOVED.encode(), under=MODELS):
        module = safe_parse(tree, relpath)
        for stmt in module.body if module else ():
            if isinstance(stmt, ast.Assign) and any(getattr(t, "id", None) == REMOVED for t in stmt.targets) \
                    and isinstance(stmt.value, ast.Dict):
                out |= {s for s in (string(k) for k in stmt.value.keys) if s}
    return out
