"""Whether each EAGLE-3 target class can feed the last layer's output (aux id n = num_hidden_layers).

vLLM's ids are capture-before: id k is the residual stream entering layer k, so id n is the output of
the last layer, which a drafter trained on output-of ids asks for as n - 1 (+1). A forward that
captures before each layer (`if idx in self.aux_hidden_state_layers`) never reaches n: the target
returns one aux state fewer than the drafter's fc takes (vllm#46788). EagleModelMixin's
`_maybe_add_hidden_state(aux, idx + 1, ...)` after each layer, or a post-loop capture guarded by
`self.end_layer in self.aux_hidden_state_layers` (DeepSeek from 0.25.0, vllm#46973), reaches it.
Read per target class from the forward that runs the capture (probes/_final_capture.py).
"""

from __future__ import annotations

from compat.probes import probe
from compat.probes._final_capture import Resolver, capture_sites, facts
from compat.probes.vllm._common import MODEL_DIRS
from compat.probes.vllm.eagle3_targets import eagle3_targets
from compat.core.tree import EngineTree

IDS_ATTRS = ("aux_hidden_state_layers",)
HELPERS = ("_maybe_add_hidden_state",)


@probe("vllm", "final_layer_capture", "Aux capture of the last layer's output (id n) per target class", order=72)
def final_layer_capture(tree: EngineTree) -> dict:
    sites = capture_sites(tree, MODEL_DIRS, IDS_ATTRS, HELPERS)
    resolver = Resolver(tree, MODEL_DIRS, sites)
    targets = [t for t in eagle3_targets(tree) if t["role"] == "target"]
    return facts([resolver.reach(t["class"], t["location"].rsplit(":", 1)[0]) for t in targets])
