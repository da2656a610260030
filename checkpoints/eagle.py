"""EAGLE / SpecForge / AngelSlim layout: the trainers' own spelling.

Tensors: the decoder layer under `midlayer.` (SafeAILab `cnets.py`, SpecForge `llama3_eagle.py`,
AngelSlim `Eagle3LlamaForCausalLM`), `fc`, `norm`, `lm_head`, `d2t`, `t2d`, optional `embed_tokens`.
Config: layer ids nested in `eagle_config`, in the trainers' output-of-layer convention
(SpecForge indexes HF `hidden_states[id + 1]`; research checkpoint-formats.md 2.3, 4.2).

Written for both engines at once (checkpoint-formats.md 6.5): `LlamaForCausalLMEagle3`, model_type
llama, the nested output-of ids SGLang and SpecForge read, and the same layers as top-level
capture-before ids, which vLLM reads.
"""

from __future__ import annotations

from compat.core.errors import RefusedError

from ._canonical import (
    restore,
    canonical_name,
    NESTED_IDS, OUTPUT_OF, TOP_IDS, DrafterConfig, ReadContext, WriteContext, hf_config,
    is_modelopt, looks_mla, read_common, recorded_layout, strip_model_prefix, to_output_of,
)
from ._declared_ids import read_declared_ids

NAME = "eagle"
DESCRIPTION = "SafeAILab EAGLE / SpecForge / AngelSlim: midlayer.*, ids nested in eagle_config (output-of)"
PRIORITY = 10
ARCHITECTURE = "LlamaForCausalLMEagle3"  # SpecForge's name; SGLang registers only this one


def detect(config: dict, tensor_names: set[str]) -> bool:
    if recorded_layout(config) is not None:
        return recorded_layout(config) == NAME
    if "speculators_model_type" in config or looks_mla(config, tensor_names):
        return False
    return any(strip_model_prefix(name).startswith("midlayer.") for name in tensor_names)


def trainer(config: dict) -> str:
    return "modelopt" if is_modelopt(config) else "specforge-angelslim-eagle"


to_canonical = canonical_name  # midlayer.* or layers.0.*, with or without model.


def from_canonical(name: str, drafter: DrafterConfig, ctx: WriteContext) -> str | None:
    return "midlayer." + name[len("layers.0."):] if name.startswith("layers.0.") else name


def read_config(config: dict, ctx: ReadContext) -> DrafterConfig:
    if is_modelopt(config):
        nested_means, why = None, ("ModelOpt ids are output-of when the drafter was trained on HF forward hooks "
                                   "and capture-before when trained on an offline vLLM hidden-state dump")
    else:
        nested_means, why = OUTPUT_OF, "SpecForge / AngelSlim / ModelOpt-HF trainers hook layer outputs"
    ids = read_declared_ids(config, ctx, nested_means=nested_means, nested_why=why, top_wins=False)
    return read_common(config, "llama", ids, layout=NAME)


def write_config(drafter: DrafterConfig, ctx: WriteContext) -> dict:
    if drafter.family != "llama":
        raise RefusedError("the EAGLE / SpecForge layout holds Llama-style drafters only; this drafter has an MLA layer",
                           hint="use --to mla (trainer layout), --to vllm or --to sglang")
    config = hf_config(drafter, architecture=ARCHITECTURE, model_type="llama")
    eagle_config = {**drafter.eagle_config_extra, "use_aux_hidden_state": True}
    ids = drafter.layer_ids.capture_before
    if ids is not None:
        config[TOP_IDS] = ids
        eagle_config["eagle_aux_hidden_state_layer_ids"] = to_output_of(ids, f"--to {NAME} ({NESTED_IDS})")
        ctx.note(f"layer ids: {TOP_IDS} = {ids} (capture-before, read by vLLM) and "
                 f"{NESTED_IDS} = {eagle_config['eagle_aux_hidden_state_layer_ids']} (output-of, read by SpecForge and SGLang)")
    config["eagle_config"] = eagle_config
    return restore(config, drafter, NAME)
