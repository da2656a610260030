"""Which target layers an LMDeploy release feeds an EAGLE-3 drafter: the config builder's default, never the drafter's.

For EAGLE-3 the target's config builder sets `hf_config.aux_hidden_state_layers = (2, num_layers // 2, num_layers -
3)` (lmdeploy/pytorch/configurations/llama.py, 0.11.0+; kimi_k2.py, 0.17.0+, InternLM/lmdeploy#4846) and the target
class captures the residual stream entering those layers (`hidden_states + residual` before layer i: capture-before).
No reader takes `eagle_aux_hidden_state_layer_ids` to the target: the Kimi-K2.5 MLA drafter reads it
(kimi_k25_eagle3.py `_get_eagle_aux_layer_ids`) only for how many states its `fc` takes. A DFlash draft's
`target_layer_ids` do reach the target (parse_dflash_config -> SpecModelBuildContext), for DFlash only.
"""

from __future__ import annotations

import ast

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes._ast import safe_parse
from compat.probes.lmdeploy._source import MODELS, SPEC_DECODE, config_builders, layer_count_expression, strings


@probe("lmdeploy", "aux_layer_ids", "EAGLE-3 aux layer ids (who picks them)", order=45)
def aux_layer_ids(tree: EngineTree) -> dict:
    defaults = [{"builder": b.name, "value": value, "default": layer_count_expression(value), "when": when,
                 "location": tree.loc(b.relpath, node)} for b in config_builders(tree) for value, when, node in b.aux_layers]
    if not defaults:
        return {"present": False, "read_from_config": False, "default": None, "default_location": None,
                "reason": "no config builder sets aux_hidden_state_layers (no EAGLE-3 in this release)"}
    drafter_reads = _reads(tree, MODELS, "eagle_aux_hidden_state_layer_ids")
    return {
        "present": True, "read_from_config": False,
        "default": defaults[0]["default"], "default_location": defaults[0]["location"], "defaults": defaults,
        "reason": "the target's config builder sets them for eagle3; the drafter's ids are not passed to the target",
        "capture": "the residual stream entering layer i (hidden_states + residual before layer i)",
        "drafter_reads": drafter_reads,  # read by a draft class for its own width, not fed to the target
        "dflash_reads": _reads(tree, SPEC_DECODE, "target_layer_ids"),
    }


def _reads(tree: EngineTree, under: str, key: str) -> list[dict]:
    """Where a module reads `key` from a config: `getattr(config, 'key')` or `config.get('key')`."""
    out = []
    for relpath in tree.grep(key.encode(), under=under):
        module = safe_parse(tree, relpath)
        for node in ast.walk(module) if module else ():
            if isinstance(node, ast.Call) and key in strings(node) and isinstance(node.func, (ast.Name, ast.Attribute)):
                name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                if name in ("getattr", "get"):
                    out.append({"key": key, "read_by": relpath[:-3].replace("/", "."), "location": tree.loc(relpath, node)})
                    break
    return out
