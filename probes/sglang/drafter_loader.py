"""How each registered SGLang EAGLE-3 drafter class loads a checkpoint.

The drafters are the `EntryClass` names of sglang/srt/models/ that say Eagle3
(`LlamaForCausalLMEagle3` in llama_eagle3.py, the MLA `Eagle3DeepseekV2ForCausalLM` in
kimi_k25_eagle3.py, whatever else a release adds). Each entry has the shape of the vLLM
drafter_loader probe (see probes/vllm/drafter_loader.py and probes/drafter_loading.py):
modules, steps, unknown, model_prefix, vocab_map, fc, layers, samples, config_reads; plus
`delegates_to` when load_weights hands names to its base class (0.4.4.post2-0.4.8:
`super().load_weights` of llama.py's LlamaForCausalLM, whose loop then decides).

    {"present": true, "drafters": {"LlamaForCausalLMEagle3": {"class", "architectures": [...],
      "module": "sglang.srt.models.llama_eagle3", "registered_at": "...:N", ...}}}

SGLang renames no drafter architecture (see drafter_architecture_rename): `architectures[0]`
of the drafter config must be one of these names itself.
"""

from __future__ import annotations

from compat.probes import probe
from compat.probes.drafter_loading import describe
from compat.probes.drafter_code import ModuleCode
from compat.probes.sglang.eagle3_drafters import drafter_classes
from compat.core.tree import EngineTree


@probe("sglang", "drafter_loader", "EAGLE-3 drafter loaders: tensor names, fc width, layers, config keys", order=62)
def drafter_loader(tree: EngineTree) -> dict:
    registered = drafter_classes(tree)
    if not registered:
        return {"present": False, "reason": "no EAGLE-3 drafter class in an EntryClass of sglang/srt/models", "drafters": {}}
    drafters: dict[str, dict] = {}
    for entry in registered:
        relpath = entry["location"].rsplit(":", 1)[0]
        fact = {"class": entry["class"], "module": entry["module"], "architectures": [entry["architecture"]],
                "registered_at": entry["registered_at"]}
        fact.update(describe(ModuleCode(tree, relpath), entry["class"]))
        drafters[fact["class"]] = fact
    return {"present": True, "drafters": drafters}
