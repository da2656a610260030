"""NVIDIA ModelOpt's HF export of an EAGLE-3 drafter (modelopt/torch/export/plugins/hf_spec_export.py).

`EagleExporter` (nvidia-modelopt 0.43 - 0.47) writes one `model.safetensors` whose keys its own
`_check_valid_sd` fixes: `layers.0.*` (Llama: `LLAMA_EAGLE_SINGLE_LAYER`; Kimi/DeepSeek MLA:
`KIMIK2_EAGLE_SINGLE_LAYER`), `fc`, `norm`, optional `lm_head` and `d2t`, and nothing else (no `t2d`, no
`embed_tokens`: an unexpected key fails its assertion). 0.37 - 0.40 wrote the same under `midlayer.*`
(read here too). config.json is a template (hf_spec_configs.py): `LlamaForCausalLMEagle3` / model_type
llama, or `Eagle3DeepseekV2ForCausalLM` / model_type kimi_k2 with the MLA fields, and the ids only in
`eagle_config` beside ModelOpt's flags (`use_input_layernorm_in_first_layer`, `use_last_layernorm`,
`use_mtp_layernorm`, `next_layer_regular`, `parallel_draft_step`, `parallel_draft_heads_num_layers`).

The convention of those ids depends on how the training data was made (HF forward hooks: output-of; an
offline vLLM dump: capture-before; checkpoint-formats.md 2.5), so reading a ModelOpt export without a
record or --layer-ids-convention refuses, naming both. Written: the ModelOpt form, plus the top-level
capture-before ids (vLLM reads them; ModelOpt's own check ignores config keys), so no reader guesses.
A field in `eagle_config` ModelOpt does not write is refused (EAGLE_CONFIG_KEYS, 0.43 - 0.47).
"""

from __future__ import annotations

from compat.core.errors import RefusedError

from ._canonical import (
    MODELOPT_FLAGS, NESTED_IDS, TOP_IDS, DrafterConfig, ReadContext, WriteContext, canonical_name, hf_config,
    is_modelopt, looks_mla, mla_model_type, read_common, recorded_layout, restore, to_output_of,
)
from ._declared_ids import read_declared_ids

NAME = "modelopt"
DESCRIPTION = "NVIDIA ModelOpt HF export: layers.0.*, d2t without t2d, ids in eagle_config beside ModelOpt's flags"
PRIORITY = 35
LLAMA_ARCHITECTURE = "LlamaForCausalLMEagle3"
MLA_ARCHITECTURE = "Eagle3DeepseekV2ForCausalLM"
KNOWN_VERSIONS = "nvidia-modelopt 0.37 - 0.47"
# eagle_config of hf_spec_configs.py's templates; next_layer_regular is True there, the rest from the model
EAGLE_CONFIG_KEYS = ("eagle_aux_hidden_state_layer_ids", "use_aux_hidden_state", *MODELOPT_FLAGS)
TEMPLATE_DEFAULTS = {"use_input_layernorm_in_first_layer": True, "use_last_layernorm": True, "use_mtp_layernorm": False,
                     "next_layer_regular": True, "parallel_draft_step": 1, "parallel_draft_heads_num_layers": 1}


def detect(config: dict, tensor_names: set[str]) -> bool:
    if recorded_layout(config) is not None:
        return recorded_layout(config) == NAME
    return "speculators_model_type" not in config and "_torchspec_version" not in config and is_modelopt(config)


def trainer(config: dict) -> str:
    return "modelopt"


to_canonical = canonical_name  # layers.0.* (>= 0.43) or midlayer.* (0.37 - 0.40)


def from_canonical(name: str, drafter: DrafterConfig, ctx: WriteContext) -> str | None:
    if name in ("t2d", "embed_tokens.weight"):
        return None  # _check_valid_sd asserts on any key outside its lists; engines derive neither from here
    if name == "d2t" and drafter.draft_vocab_size is not None and drafter.draft_vocab_size == drafter.vocab_size:
        return None  # full vocabulary: ModelOpt writes d2t only with a draft-vocab cache
    return name


def read_config(config: dict, ctx: ReadContext) -> DrafterConfig:
    nested = config.get("eagle_config")
    eagle_config: dict = nested if isinstance(nested, dict) else {}
    unknown = sorted(k for k in eagle_config if k not in EAGLE_CONFIG_KEYS and k != "norm_before_fc")
    if unknown:
        raise RefusedError(f"config.json: eagle_config field {unknown[0]!r} is not one ModelOpt writes ({KNOWN_VERSIONS}: "
                           f"{', '.join(EAGLE_CONFIG_KEYS)})", hint="convert with the ModelOpt release that wrote it, or remove the field")
    ids = read_declared_ids(
        config, ctx, nested_means=None, top_wins=False,
        nested_why=("ModelOpt ids are output-of when the drafter was trained on HF forward hooks "
                    "and capture-before when trained on an offline vLLM hidden-state dump"))
    return read_common(config, "mla" if looks_mla(config, set()) or "kv_lora_rank" in config else "llama", ids, layout=NAME)


def write_config(drafter: DrafterConfig, ctx: WriteContext) -> dict:
    if drafter.family == "mla":
        config = hf_config(drafter, architecture=MLA_ARCHITECTURE, model_type=mla_model_type(drafter))
    else:
        config = hf_config(drafter, architecture=LLAMA_ARCHITECTURE, model_type="llama")
    config.pop("norm_before_residual", None)  # not a ModelOpt field: its drafters have no such option
    if drafter.norm_before_residual:
        raise RefusedError("the drafter was trained with norm_before_residual: true, which ModelOpt's EAGLE-3 module "
                           "does not have", hint="keep it in the speculators or vllm layout")
    eagle_config = {**TEMPLATE_DEFAULTS, **drafter.eagle_config_extra, "use_aux_hidden_state": True}
    ids = drafter.layer_ids.capture_before
    if ids is not None:
        config[TOP_IDS] = ids
        eagle_config["eagle_aux_hidden_state_layer_ids"] = to_output_of(ids, f"--to {NAME} ({NESTED_IDS})")
        ctx.note(f"layer ids: {NESTED_IDS} = {eagle_config['eagle_aux_hidden_state_layer_ids']} (output-of, as ModelOpt's "
                 f"HF training hooks them) and {TOP_IDS} = {ids} (capture-before, read by vLLM)")
    config["eagle_config"] = eagle_config
    ctx.note("ModelOpt form: layers.0.*, d2t without t2d, no embed_tokens (its export check refuses any other key)")
    return restore(config, drafter, NAME)
