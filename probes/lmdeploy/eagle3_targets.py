"""Which LMDeploy target classes can feed an EAGLE-3 drafter: the ones that capture the layers their config names.

A target class captures the residual stream entering each layer of `config.aux_hidden_state_layers` (`getattr(config,
'aux_hidden_state_layers', ())`: lmdeploy/pytorch/models/llama.py; kimi_k2_language.py, reached from Kimi-K2.5's
class, 0.17.0+), and its config builder sets that attribute only for the EAGLE-3 method (`if spec_method == 'eagle3':
hf_config.aux_hidden_state_layers = (2, n // 2, n - 3)`). There is no whitelist and no interface: a target whose class
captures nothing hands the drafter its last hidden state, which Eagle3LlamaModel takes without its `fc` when the
widths match (`if previous_hidden_states.shape[-1] != inputs_embeds.shape[-1]`): no error, a low acceptance.
Classes that read the layers from the build context (Qwen3, Qwen3.5) capture what a DFlash draft names, not EAGLE-3's.
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.lmdeploy._source import capture_classes, class_location, config_builders, module_map


@probe("lmdeploy", "eagle3_targets", "EAGLE-3 target classes (capture the config's aux_hidden_state_layers)", order=40)
def eagle3_targets(tree: EngineTree) -> list[dict]:
    mapped = module_map(tree)
    builders = config_builders(tree)
    setters = [b for b in builders if b.aux_layers]
    out = []
    for target, (archs, capture) in sorted(capture_classes(tree, mapped).items()):
        if capture.source != "config":
            continue
        entry = mapped[archs[0]]
        by_arch = [b for b in setters if set(archs) & set(b.architectures)]
        by_type = [b for b in setters if b.model_types and not b.architectures]
        by_type += [b for b in builders if set(b.delegates_to) & {s.name for s in by_type} and b not in by_type]
        gates = by_arch or by_type
        out.append({
            "class": entry.cls, "role": "target", "architectures": archs, "module": target.rsplit(".", 1)[0],
            "location": class_location(tree, entry), "capture_location": tree.loc(capture.relpath, capture.node),
            "accepts_layer_ids": False,  # the builder's ids, never the drafter's
            "layers_set_by": [{"builder": b.name, "value": value, "when": when, "location": tree.loc(b.relpath, node),
                               "architectures": b.architectures, "model_types": b.model_types}
                              for b in gates for value, when, node in b.aux_layers],  # a delegating builder sets none itself
            "admitted_when": ("architectures[0] in " + repr(sorted({a for b in by_arch for a in b.architectures}))) if by_arch
            else ("model_type in " + repr(sorted({t for b in by_type for t in b.model_types}))) if by_type else None,
        })
    return out
