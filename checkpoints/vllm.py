"""vLLM native layout: what `vllm serve --speculative-config '{"method": "eagle3", ...}'` loads.

Tensors: `layers.{k}.*` (no `model.` prefix: vLLM prepends it and fails on `model.model.*`),
`fc`, `norm`, `lm_head`, `d2t` (offsets; renamed to draft_id_to_target_id on load), `t2d`
(skipped on load), optional `embed_tokens` (absent: shared with the target).
Config: the top-level `eagle_aux_hidden_state_layer_ids`, capture-before, never offset.
Facts from research vllm-eagle3.md 3.3, 4.1, 4.2, 5 and checkpoint-formats.md 3.1, 5.
"""

from __future__ import annotations

from packaging.version import Version

from compat.core.errors import RefusedError

from ._canonical import (
    restore,
    canonical_name,
    TOP_IDS, DrafterConfig, ReadContext, WriteContext, default_layer_ids, hf_config, looks_mla,
    mla_model_type, read_common, recorded_layout, strip_model_prefix,
)
from ._declared_ids import read_declared_ids

NAME = "vllm"
ENGINE = "vllm"  # written for vLLM's releases (its loader's names, its config keys)
DESCRIPTION = "vLLM native: layers.0.*, no model. prefix, top-level eagle_aux_hidden_state_layer_ids (capture-before)"
PRIORITY = 5

# --- version gates (vLLM releases; the first release in the research sample that has the behaviour)
# `Eagle3LlamaForCausalLM` is registered in every release from 0.10.0 (registry.py
# _SPECULATIVE_DECODING_MODELS); `LlamaForCausalLMEagle3` only from 0.10.2. Written: the former.
LLAMA_ARCHITECTURE = "Eagle3LlamaForCausalLM"
# gpu_model_runner._get_eagle3_aux_layers_from_config reads the top-level ids from 0.11.1; before
# that every drafter gets the target's default (2, n//2, n-3).
READS_LAYER_IDS = Version("0.11.1")
# num_hidden_layers honoured (multi-layer drafters) from 0.11.1.
MULTI_LAYER = Version("0.11.1")
# fc sized from num_aux_hidden_states / the id count from 0.22.0; before, always 3 aux states.
NUM_AUX = Version("0.22.0")
# deepseek_eagle3.Eagle3DeepseekV2ForCausalLM (the MLA drafter) registered from 0.18.0.
MLA_DRAFTER = Version("0.18.0")
MLA_ARCHITECTURE = "Eagle3DeepseekV2ForCausalLM"
# draft_id_to_target_id exists only when draft vocab != target vocab from 0.30.0, so a full-vocab
# drafter that ships d2t fails to load ("no module or parameter named draft_id_to_target_id").
FULL_VOCAB_REJECTS_D2T = Version("0.30.0")


def detect(config: dict, tensor_names: set[str]) -> bool:
    if recorded_layout(config) is not None:
        return recorded_layout(config) == NAME
    if "speculators_model_type" in config or looks_mla(config, tensor_names):
        return False
    return any(strip_model_prefix(name).startswith("layers.") for name in tensor_names)


def trainer(config: dict) -> str:
    return "unknown"  # written by speculators' converter, TorchSpec --vllm, ModelOpt or by hand: the layout does not say


to_canonical = canonical_name  # midlayer.* or layers.0.*, with or without model.


def from_canonical(name: str, drafter: DrafterConfig, ctx: WriteContext) -> str | None:
    if name in ("d2t", "t2d") and full_vocab(drafter):
        return None  # identity mapping: vLLM >= 0.30 refuses d2t here, earlier releases do not need it
    return name


def full_vocab(drafter: DrafterConfig) -> bool:
    return drafter.draft_vocab_size is not None and drafter.draft_vocab_size == drafter.vocab_size


def read_config(config: dict, ctx: ReadContext) -> DrafterConfig:
    ids = read_declared_ids(
        config, ctx, nested_means=None, top_wins=True,
        nested_why=("ids only in eagle_config are what vLLM >= 0.22 reads as capture-before, but also what "
                    "ModelOpt >= 0.43 exports, which may have trained on layer outputs"))
    return read_common(config, "mla" if looks_mla(config, set()) else "llama", ids, layout=NAME)


def write_config(drafter: DrafterConfig, ctx: WriteContext) -> dict:
    if drafter.family == "mla":
        if ctx.at_least(MLA_DRAFTER) is False:
            raise RefusedError(f"vLLM {ctx.engine_version} has no MLA drafter ({MLA_ARCHITECTURE} is registered from {MLA_DRAFTER})",
                               hint=f"serve on vLLM >= {MLA_DRAFTER}")
        if ctx.engine_version is None:
            ctx.note(f"MLA drafter: needs vLLM >= {MLA_DRAFTER}")
        config = hf_config(drafter, architecture=MLA_ARCHITECTURE, model_type=mla_model_type(drafter))
    else:
        config = hf_config(drafter, architecture=LLAMA_ARCHITECTURE, model_type="llama")
    if drafter.num_hidden_layers > 1 and ctx.at_least(MULTI_LAYER) is False:
        raise RefusedError(f"vLLM {ctx.engine_version} builds one drafter layer; this drafter has {drafter.num_hidden_layers}",
                           hint=f"serve on vLLM >= {MULTI_LAYER}")
    _write_layer_ids(config, drafter, ctx)
    if full_vocab(drafter):
        ctx.note(f"draft vocab == target vocab: d2t/t2d not written (identity; vLLM >= {FULL_VOCAB_REJECTS_D2T} rejects d2t)")
    return restore(config, drafter, NAME)


def _write_layer_ids(config: dict, drafter: DrafterConfig, ctx: WriteContext) -> None:
    ids = drafter.layer_ids.capture_before
    if ids is None:
        ctx.note("layer ids: none declared and no --target to compute the default: vLLM uses (2, n//2, n-3)")
        return
    config[TOP_IDS] = ids
    ctx.note(f"layer ids: {TOP_IDS} = {ids} (capture-before; vLLM never offsets EAGLE-3 ids)")
    if ctx.at_least(READS_LAYER_IDS) is not True:
        n = ctx.target.num_hidden_layers if ctx.target else None
        if n and ids != default_layer_ids(n):
            message = (f"vLLM before {READS_LAYER_IDS} ignores drafter layer ids and always feeds (2, n//2, n-3) = "
                       f"{default_layer_ids(n)}; this drafter was trained on {ids}")
            if ctx.engine_version is not None:
                raise RefusedError(f"{message} (--engine-version {ctx.engine_version})", hint=f"serve on vLLM >= {READS_LAYER_IDS}")
            ctx.note(f"warning: {message}")
    if len(ids) != 3:
        if ctx.at_least(NUM_AUX) is False:
            raise RefusedError(f"vLLM {ctx.engine_version} sizes fc for 3 aux hidden states; this drafter uses {len(ids)}",
                               hint=f"serve on vLLM >= {NUM_AUX}")
        config["num_aux_hidden_states"] = len(ids)
