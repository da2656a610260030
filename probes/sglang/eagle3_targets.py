"""Which SGLang target classes can feed an EAGLE-3 drafter, and how they shift its layer ids.

Gate: a class has `set_eagle3_layers_to_capture` (own or inherited); without it an EAGLE3
run dies with AttributeError. Llama since 0.4.4.post2, DeepseekV2/V3 since 0.5.4.post2,
Kimi-K2.5 (delegating to its language model) since 0.5.10; DeepSeek's +1 became
conditional in 0.5.13. All of it is read from the method bodies, see _models.py.
"""

from __future__ import annotations

from compat.probes import probe
from compat.probes.sglang._models import Target, eagle3_targets, is_eagle3_drafter_name, module_name
from compat.core.tree import EngineTree


def target_json(tree: EngineTree, target: Target) -> dict:
    method = target.method
    entry = {
        "class": target.cls,
        "location": tree.loc(target.relpath, target.line),
        "module": module_name(target.relpath),
        "architectures": [target.cls] if target.registered else [],
        "accepts_layer_ids": method.accepts_layer_ids,
        "layer_id_offset": method.offset,
        "default": method.default,
        "method_location": tree.loc(method.relpath, method.node),
    }
    if method.cls != target.cls or method.relpath != target.relpath:
        entry["inherited_from"] = method.cls
    if method.delegates_to:
        entry["delegates_to"] = {
            "attribute": method.delegates_to,
            "class": target.delegate_cls,
            "layer_id_offset": target.delegate.method.offset if target.delegate else None,
        }
    if method.default_shifted:
        entry["default_shifted"] = True  # the default ids go through the offset too
    if is_eagle3_drafter_name(target.cls, target.relpath):
        entry["is_drafter"] = True  # inherits the hook from its target base; not a target itself
    return entry


@probe("sglang", "eagle3_targets", "EAGLE-3 target classes (set_eagle3_layers_to_capture)", order=50)
def eagle3_targets_probe(tree: EngineTree) -> list[dict]:
    return [target_json(tree, t) for t in eagle3_targets(tree) if t.registered]
