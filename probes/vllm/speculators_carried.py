"""Which keys of a speculators-format config.json each release carries into the drafter's config.

vLLM builds the drafter's HF config from `transformer_layer_config` and copies the top-level keys its updater
for the `speculators_model_type` names (vllm/transformers_utils/configs/speculators/algos.py,
`@register_speculator("eagle3") def update_eagle3`): a key it does not copy is dropped without a word, and the
drafter is built as if it were unset. Upstream added the keys one at a time (eagle_aux_hidden_state_layer_ids in
0.11.1, norm_before_fc in 0.19.0, fc_norm and norm_output in 0.25.0, as the releases' own updaters read), so the fact
is keyed "TYPE.KEY" (`eagle3.norm_before_fc`): doctor's release finder bisects for the first release that
carries a key the same way it does for a registry entry.

    {"eagle3.draft_vocab_size": {"to", "default", "when", "location"}, ...}
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.vllm.speculators_format import eagle3_updater, registered_types


@probe("vllm", "speculators_carried", "speculators-format keys carried into the drafter's config (per type)", order=65)
def speculators_carried(tree: EngineTree) -> dict:
    out: dict = {}
    for kind, entry in sorted(registered_types(tree).items()):
        updater = eagle3_updater(tree, entry) or {}
        for copy in updater.get("copies") or []:
            out.setdefault(f"{kind}.{copy['from']}", {"to": copy["key"], "default": copy["default"], "when": copy["when"],
                                                      "location": copy["location"]})
    return out
