"""MLA drafter layout (`Eagle3DeepseekV2ForCausalLM`): Kimi-K2 / DeepSeek-V3 drafters.

As ModelOpt >= 0.43 and TorchSpec export it: the MLA decoder layer under `layers.0.self_attn`
(`q_a_proj`, `q_a_layernorm`, `q_b_proj`, `kv_a_proj_with_mqa`, `kv_a_layernorm`, `kv_b_proj`,
`o_proj`), a dense MLP, `fc`, `norm`, `lm_head`, `d2t`/`t2d`; model_type `kimi_k2` and the MLA
config fields (`q_lora_rank`, `kv_lora_rank`, `qk_nope_head_dim`, `qk_rope_head_dim`, `v_head_dim`).
The exporters write ids only inside `eagle_config`, and their convention depends on how the
training data was produced (checkpoint-formats.md 2.5, 2.7; sgl-project/sglang#25454), so a
nested-only id list is ambiguous here. Written with both fields, like the EAGLE layout.
Engines: vLLM >= 0.18 (vllm/model_executor/models/deepseek_eagle3.py), SGLang >= 0.5.12
(sglang/srt/models/kimi_k25_eagle3.py); see vllm.py and sglang.py for those gates.
"""

from __future__ import annotations

from compat.core.errors import RefusedError

from ._canonical import (
    restore,
    canonical_name,
    NESTED_IDS, TOP_IDS, DrafterConfig, ReadContext, WriteContext, hf_config, looks_mla,
    mla_model_type, read_common, recorded_layout, to_output_of,
)
from ._declared_ids import read_declared_ids

NAME = "mla"
DESCRIPTION = "MLA drafter Eagle3DeepseekV2ForCausalLM (ModelOpt >= 0.43, TorchSpec): layers.0.self_attn.q_a_proj ..."
PRIORITY = 30
ARCHITECTURE = "Eagle3DeepseekV2ForCausalLM"
MLA_FIELDS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def detect(config: dict, tensor_names: set[str]) -> bool:
    if recorded_layout(config) is not None:
        return recorded_layout(config) == NAME
    return "speculators_model_type" not in config and looks_mla(config, tensor_names)


def trainer(config: dict) -> str:
    return "modelopt-torchspec-mla"


to_canonical = canonical_name  # midlayer.* or layers.0.*, with or without model.


def from_canonical(name: str, drafter: DrafterConfig, ctx: WriteContext) -> str | None:
    return name


def read_config(config: dict, ctx: ReadContext) -> DrafterConfig:
    ids = read_declared_ids(
        config, ctx, nested_means=None, top_wins=False,
        nested_why=("MLA exporters write eagle_config ids only; TorchSpec's template [1, 29, 57] is output-of, "
                    "lightseekorg's kimi-k2.5-eagle3-mla uses capture-before (sgl-project/sglang#25454)"))
    drafter = read_common(config, "mla", ids, layout=NAME)
    missing = [key for key in MLA_FIELDS[:2] if not config.get(key)]
    if missing:
        raise RefusedError(f"config.json: an MLA drafter needs {', '.join(missing)}",
                           hint="copy the MLA fields from the trainer's template (q_lora_rank 1536, kv_lora_rank 512 for Kimi-K2)")
    return drafter


def write_config(drafter: DrafterConfig, ctx: WriteContext) -> dict:
    if drafter.family != "mla":
        raise RefusedError("--to mla writes MLA drafters; this drafter has a Llama-style (GQA) layer",
                           hint="use --to eagle, --to vllm, --to sglang or --to speculators")
    config = hf_config(drafter, architecture=ARCHITECTURE, model_type=mla_model_type(drafter))
    eagle_config = {**drafter.eagle_config_extra, "use_aux_hidden_state": True}
    ids = drafter.layer_ids.capture_before
    if ids is not None:
        config[TOP_IDS] = ids
        eagle_config["eagle_aux_hidden_state_layer_ids"] = to_output_of(ids, f"--to {NAME} ({NESTED_IDS})")
        ctx.note(f"layer ids: {TOP_IDS} = {ids} (capture-before) and {NESTED_IDS} = "
                 f"{eagle_config['eagle_aux_hidden_state_layer_ids']} (output-of), so no reader has to guess")
    config["eagle_config"] = eagle_config
    return restore(config, drafter, NAME)
