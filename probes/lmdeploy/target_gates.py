"""What an LMDeploy release admits as a target, per method: each config builder's own checks, read from its `build`.

LMDeploy has no model-type whitelist and no interface: each config builder (lmdeploy/pytorch/configurations/*.py)
decides for the configs its `condition` takes. It may admit only some methods (`assert spec_method ==
'deepseek_mtp'`: DeepSeek-V2/V3 and GLM-4 MoE targets take MTP only; `supported_spec_methods = {'deepseek_mtp',
'eagle3'}`: Kimi-K2), set the layers an EAGLE-3 target captures (`aux_hidden_state_layers`), or hand the config to
another builder (Kimi-K2.5 -> Kimi-K2). A config no builder takes goes to DefaultModelConfigBuilder, which checks
nothing and sets no layer. The classes that capture a DFlash draft's layers read them from the build context.
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.lmdeploy._source import capture_classes, config_builders, module_map, reads_draft_inputs


@probe("lmdeploy", "target_gates", "Target gates (what each config builder admits, per method)", order=41)
def target_gates(tree: EngineTree) -> dict:
    builders = []
    for b in config_builders(tree):
        if not (b.methods or b.aux_layers or b.draft_architectures or b.renames or b.required_draft):
            continue  # a builder that says nothing of speculative decoding
        builders.append({
            "builder": b.name, "location": tree.loc(b.relpath, b.node), "condition": b.condition,
            "condition_location": tree.loc(b.relpath, b.condition_line), "architectures": b.architectures,
            "model_types": b.model_types,
            "methods": sorted({m for names, _ in b.methods for m in names}) or None,  # None: it checks no method
            "methods_location": tree.loc(b.relpath, b.methods[0][1]) if b.methods else None,
            "eagle3_layers": [{"value": v, "when": w, "location": tree.loc(b.relpath, n)} for v, w, n in b.aux_layers],
            "delegates_to": b.delegates_to,
        })
    dflash = [{"class": target.rsplit(".", 1)[-1], "architectures": archs, "capture_location": tree.loc(c.relpath, c.node)}
              for target, (archs, c) in sorted(capture_classes(tree, module_map(tree)).items())
              if c.source == "build context" and not reads_draft_inputs(tree, c.relpath)]
    if not builders:
        return {"present": False, "reason": "no config builder checks a speculative method in this release"}
    return {"present": True, "builders": builders, "dflash_targets": dflash,
            "otherwise": "DefaultModelConfigBuilder: any method, no captured layer"}
