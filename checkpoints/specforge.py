"""SpecForge's own drafter directory: what `specforge export --to sglang` writes and its loaders take back.

Read from specforge 0.2.0 (it pins sglang 0.5.14 and torch 2.11, so tests/peers models it rather than
running it): `specforge/export/to_sglang.py` saves `LlamaForCausalLMEagle3.state_dict()` with the identity
name map (`midlayer.*`, `fc`, `norm`, `lm_head`, the `t2d`/`d2t` buffers) and refuses output without
`_REQUIRED_SERVING_KEYS` = fc.weight, norm.weight, lm_head.weight, t2d, d2t; `export/checkpoint_io.py`
`materialize_draft` fails on any key the model lacks and on any missing non-embedding key;
`modeling/auto.py` `AutoDraftModelConfig.from_file` wants exactly one registered architecture, forces
`tie_word_embeddings` false and defaults `draft_vocab_size` to `vocab_size`. The model
(`modeling/draft/llama3_eagle.py`) has one `midlayer`, `fc` over exactly 3 aux states, optional
`fc_norm.{0,1,2}`, and always both buffers (t2d all true, d2t zeros for a full vocabulary).

So this is the EAGLE layout (eagle.py) with those rules: both maps always (identity maps written for a
full-vocabulary drafter, which SpecForge itself creates), one layer, 3 aux states, no `input_norm`. It is
recognised only through compat's record: a SpecForge checkpoint reads as the EAGLE layout.
"""

from __future__ import annotations

from compat.core.errors import RefusedError

from . import eagle
from ._canonical import DrafterConfig, ReadContext, WriteContext, recorded_layout

NAME = "specforge"
DESCRIPTION = "SpecForge (export --to sglang): midlayer.*, fc/norm/lm_head/t2d/d2t always, one layer, 3 aux states"
PRIORITY = 48  # recognised only through the record a conversion leaves (it is otherwise the EAGLE layout)
ARCHITECTURE = eagle.ARCHITECTURE  # the one SpecForge's DRAFT_REGISTRY entry for EAGLE-3
REQUIRED_SERVING_KEYS = ("fc.weight", "norm.weight", "lm_head.weight", "t2d", "d2t")  # to_sglang.py
NEEDS_VOCAB_MAPS = True  # convert writes identity d2t/t2d when a full-vocabulary source has neither


def detect(config: dict, tensor_names: set[str]) -> bool:
    return recorded_layout(config) == NAME


def trainer(config: dict) -> str:
    return "specforge-angelslim-eagle"


to_canonical = eagle.to_canonical


def from_canonical(name: str, drafter: DrafterConfig, ctx: WriteContext) -> str | None:
    if name == "input_norm.weight" or name.startswith("layers.") and not name.startswith("layers.0."):
        return None  # refused in write_config before any tensor is planned
    return eagle.from_canonical(name, drafter, ctx)


def read_config(config: dict, ctx: ReadContext) -> DrafterConfig:
    drafter = eagle.read_config(config, ctx)
    drafter.carried[NAME] = drafter.carried.pop(eagle.NAME, {})
    return drafter


def write_config(drafter: DrafterConfig, ctx: WriteContext) -> dict:
    if drafter.num_hidden_layers != 1:
        raise RefusedError(f"SpecForge's LlamaForCausalLMEagle3 has one midlayer; this drafter has {drafter.num_hidden_layers} layers",
                           hint="keep it in the vllm or speculators layout")
    if drafter.aux_count != 3:
        raise RefusedError(f"SpecForge's fc takes exactly 3 aux hidden states (Linear(target_hidden_size * 3, ...)); "
                           f"this drafter uses {drafter.aux_count}", hint="keep it in the vllm layout")
    if drafter.flags.get("norm_before_fc"):
        raise RefusedError("SpecForge's LlamaForCausalLMEagle3 has no input_norm (norm_before_fc: true): its loader "
                           "refuses the tensor", hint="keep it in the speculators or vllm layout")
    eagle_carried = drafter.carried.get(eagle.NAME)
    drafter.carried[eagle.NAME] = drafter.carried.get(NAME) or {}
    try:
        config = eagle.write_config(drafter, ctx)
    finally:
        if eagle_carried is None:
            drafter.carried.pop(eagle.NAME, None)
        else:
            drafter.carried[eagle.NAME] = eagle_carried
    ctx.note("SpecForge form: midlayer.*, t2d and d2t always (its exporter refuses a directory without them)")
    return config
