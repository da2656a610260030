"""The architectures an LMDeploy draft checkpoint may declare to be built as an EAGLE-3 draft class.

Not the class names alone: LlamaModelConfigBuilder renames a `LlamaForCausalLM` draft to `Eagle3LlamaForCausalLM`
for `--speculative-algorithm eagle3` (lmdeploy/pytorch/configurations/llama.py, 0.11.0+), so `LlamaForCausalLM` is
what the draft's config.json says; a draft written `LlamaForCausalLMEagle3` (SpecForge, the EAGLE layout) is taken by
no builder, keeps its name and is not in MODULE_MAP (`RuntimeError: Can not found rewrite for architectures`,
lmdeploy/pytorch/models/patch.py). Kimi-K2's builder requires `Eagle3DeepseekV2ForCausalLM` (0.17.0+). See
probes/lmdeploy/_drafters.py.
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.lmdeploy._drafters import eagle3_drafts


@probe("lmdeploy", "eagle3_drafters", "EAGLE-3 draft architectures (as a draft's config declares them)", order=62)
def eagle3_drafters(tree: EngineTree) -> list[str]:
    return sorted({d.declared for d in eagle3_drafts(tree)})


@probe("lmdeploy", "eagle3_drafter_classes", "EAGLE-3 draft classes (each declared architecture, the class built)", order=63)
def eagle3_drafter_classes(tree: EngineTree) -> list[dict]:
    return [d.to_json() for d in eagle3_drafts(tree)]
