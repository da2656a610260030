"""LMDeploy's EAGLE-3 draft classes, with the architecture a draft checkpoint declares to be built as each.

Read from the draft_models probe's rows (config builders and the model map, probes/lmdeploy/draft_models.py): a draft
class is EAGLE-3's when a builder builds it for the `eagle3` method (`spec_method.capitalize() +
architectures[0]` of a `LlamaForCausalLM` draft: Eagle3LlamaForCausalLM, lmdeploy/pytorch/configurations/llama.py), or
requires it of an `eagle3` draft (Kimi-K2's `Eagle3DeepseekV2ForCausalLM`, 0.17.0+, configurations/kimi_k2.py). The
architecture a checkpoint declares is the one the builder's condition takes (`LlamaForCausalLM`), or the class's own
name where the builder requires it.
"""

from __future__ import annotations

from dataclasses import dataclass

from compat.core.tree import EngineTree
from compat.probes.lmdeploy.draft_models import draft_models

EAGLE3 = "eagle3"


@dataclass(frozen=True)
class Eagle3Draft:
    declared: str  # what a draft checkpoint's architectures[0] says
    cls: str  # the class LMDeploy builds
    module: str  # lmdeploy.pytorch.models.llama_eagle3
    location: str | None  # the class
    registered: str | None  # its MODULE_MAP entry
    how: str  # "renamed from LlamaForCausalLM", "the draft's own architecture, required by the builder"
    by: str | None  # where the builder renames or requires it
    model_types: tuple[str, ...]  # the draft model_type the builder's condition takes (empty: any)

    @property
    def relpath(self) -> str:
        return self.module.replace(".", "/") + ".py"

    def to_json(self) -> dict:
        return {"architecture": self.declared, "class": self.cls, "module": self.module, "location": self.location,
                "registered": self.registered, "how": self.how, "built_by": self.by, "model_types": list(self.model_types)}


def eagle3_drafts(tree: EngineTree) -> list[Eagle3Draft]:
    out: list[Eagle3Draft] = []
    for row in draft_models(tree):
        if not row["in_module_map"] or row["class"] is None:
            continue
        for built in row["built_from"]:
            methods = built["methods"]
            if not (EAGLE3 in (methods or []) or (methods is None and EAGLE3 in row["class"].lower())):
                continue
            renamed = built["how"].startswith("renamed from")
            names = built["draft_architectures"] if renamed else [row["architecture"]]
            for name in names:
                draft = Eagle3Draft(name, row["class"], row["module"], row["location"], row["map_location"], built["how"],
                                    built["location"], tuple(built["draft_model_types"]))
                if draft not in out:
                    out.append(draft)
    return sorted(out, key=lambda d: (d.declared, d.cls))
