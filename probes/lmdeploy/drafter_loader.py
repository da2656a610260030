"""How each LMDeploy EAGLE-3 draft class loads a checkpoint, read with the shared drafter readers.

The classes are probes/lmdeploy/_drafters.py's (Eagle3LlamaForCausalLM in lmdeploy/pytorch/models/llama_eagle3.py,
0.11.0+; the Kimi-K2.5 MLA drafter Eagle3DeepseekV2ForCausalLM in kimi_k25_eagle3.py, 0.17.0+). Each entry has the
shape of the vLLM and SGLang drafter_loader probes (probes/vllm/drafter_loader.py, probes/drafter_loading.py):
modules, steps, unknown, model_prefix, vocab_map, fc, layers, samples, config_reads; `architectures` are the names a
draft checkpoint declares to be built as the class (`LlamaForCausalLM`, renamed by the config builder).

What the readers find in LMDeploy's loops: Eagle3LlamaForCausalLM prefixes `model.` to every name but `lm_head.weight`
and d2t (so `model.*` and `layers.0.*` names miss their parameter: KeyError), renames d2t to `draft_id_to_target_id`
(adding the draft ids, so the offsets a trainer writes become target ids), skips t2d and rotary buffers, and skips
`lm_head.weight` when `tie_word_embeddings`; the Kimi drafter strips `model.`, maps `layers.0.` to `midlayer.`, takes
d2t into `draft_id_to_target_id` and the target's embedding instead of the draft's.
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.drafter_code import ModuleCode
from compat.probes.drafter_loading import describe
from compat.probes.lmdeploy._drafters import eagle3_drafts


@probe("lmdeploy", "drafter_loader", "EAGLE-3 draft loaders: tensor names, fc width, layers, config keys", order=64)
def drafter_loader(tree: EngineTree) -> dict:
    drafts = eagle3_drafts(tree)
    if not drafts:
        return {"present": False, "reason": "no EAGLE-3 draft class in MODULE_MAP that a config builder builds for eagle3",
                "drafters": {}}
    drafters: dict[str, dict] = {}
    for draft in drafts:
        known = drafters.get(draft.cls)
        if known is not None:
            known["architectures"].append(draft.declared)
            continue
        fact = {"class": draft.cls, "module": draft.module, "architectures": [draft.declared], "registered": draft.registered}
        if tree.exists(draft.relpath):
            fact.update(describe(ModuleCode(tree, draft.relpath), draft.cls))
        else:
            fact["error"] = f"module {draft.module} not found"
        drafters[draft.cls] = fact
    return {"present": True, "drafters": drafters}
