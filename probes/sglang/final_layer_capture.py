"""Whether each EAGLE-3 target class can feed the last layer's output (capture-before id n).

SGLang adds its offset to the drafter's ids first (`layers_to_capture = [val + 1 for val in ids]` on
Llama & co.), then the model's forward captures the input of layer i when `i in self.layers_to_capture`
(`capture_output=... if i in self.layers_to_capture`): i runs over the layers, so n (the last layer's
output, what output-of id n - 1 becomes) is never captured and the drafter's fc gets one aux state
fewer (sglang#32226: "size of tensor a (8640) must match ... (5760)"). A capture after the loop guarded
by `self.end_layer in self.layers_to_capture` (gpt-oss, sglang#32334) reaches it. Read per target
class from the forward that runs the capture (probes/_final_capture.py).
"""

from __future__ import annotations

from compat.probes import probe
from compat.probes._final_capture import Resolver, capture_sites, facts
from compat.probes.sglang._models import MODELS_DIR, eagle3_targets
from compat.core.tree import EngineTree

IDS_ATTRS = ("layers_to_capture",)
HELPERS: tuple[str, ...] = ()


@probe("sglang", "final_layer_capture", "Aux capture of the last layer's output (id n) per target class", order=72)
def final_layer_capture(tree: EngineTree) -> dict:
    sites = capture_sites(tree, (MODELS_DIR,), IDS_ATTRS, HELPERS)
    resolver = Resolver(tree, (MODELS_DIR,), sites)
    targets = [t for t in eagle3_targets(tree) if t.registered]
    return facts([resolver.reach(t.cls, t.relpath) for t in targets])
