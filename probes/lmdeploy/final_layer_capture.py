"""Whether each LMDeploy EAGLE-3 target class can capture the last layer's output (capture-before id n).

LMDeploy's target classes record the residual stream entering layer idx when `idx in self.aux_hidden_state_layers`
(lmdeploy/pytorch/models/llama.py: `aux_hidden_states.append(hidden_states + residual)` before the layer runs;
kimi_k2_language.py, 0.17.0+, through a local copy of the attribute), so ids run over 0 .. n-1 and id n is never
captured. The ids are the config builder's (2, n // 2, n - 3) whatever the drafter says (aux_layer_ids), so no id n is
fed on these releases; the fact is read per target class as for vLLM and SGLang (probes/_final_capture.py).
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes._final_capture import Resolver, capture_sites, facts
from compat.probes.lmdeploy._source import MODELS
from compat.probes.lmdeploy.eagle3_targets import eagle3_targets

IDS_ATTRS = ("aux_hidden_state_layers", "_aux_hidden_state_layers_set")
HELPERS: tuple[str, ...] = ()


@probe("lmdeploy", "final_layer_capture", "Aux capture of the last layer's output (id n) per target class", order=72)
def final_layer_capture(tree: EngineTree) -> dict:
    targets = eagle3_targets(tree)
    if not targets:
        return facts([])
    sites = capture_sites(tree, (MODELS,), IDS_ATTRS, HELPERS, local_copies=True)
    resolver = Resolver(tree, (MODELS,), sites)
    return facts([resolver.reach(t["class"], t["location"].rsplit(":", 1)[0]) for t in targets])
