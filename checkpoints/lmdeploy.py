"""LMDeploy native layout: what `lmdeploy serve api_server TARGET --backend pytorch --speculative-algorithm eagle3
--speculative-draft-model DIR` loads (0.11.0+, its PyTorch engine).

Tensors: the EAGLE layout's (`midlayer.*`, `fc`, `norm`, `lm_head`, `d2t`, `t2d`, optional `embed_tokens`), with no
`model.` prefix: Eagle3LlamaForCausalLM.load_weights prefixes `model.` to every name but `lm_head.weight` and d2t
(lmdeploy/pytorch/models/llama_eagle3.py:298, 0.18.0), so `layers.0.*` (vLLM's) and `model.*` names miss their
parameter (KeyError); d2t is renamed to `draft_id_to_target_id` with the draft ids added (:291-296: the offsets the
trainers write), t2d is skipped (:301). The Kimi-K2.5 MLA drafter (Eagle3DeepseekV2ForCausalLM, 0.17.0+) strips
`model.` and maps `layers.0.` to `midlayer.` itself (kimi_k25_eagle3.py:515, :536): `midlayer.*` loads there too.

Config: where it differs from the EAGLE layout. A Llama drafter must say `LlamaForCausalLM`: LlamaModelConfigBuilder
takes only that architecture (configurations/llama.py:11) and renames a draft to `Eagle3LlamaForCausalLM` for eagle3
(:21); `LlamaForCausalLMEagle3` is taken by no builder and is not in MODULE_MAP (`RuntimeError: Can not found rewrite
for architectures`). One decoder layer (llama_eagle3.py:172), `draft_vocab_size` read without a default (:179). An MLA
drafter must say `Eagle3DeepseekV2ForCausalLM` with model_type `kimi_k2` (configurations/kimi_k2.py:25, :66), one
layer, three unique ids (kimi_k25_eagle3.py:46).

Layer ids: no release reads the drafter's ids to choose the target's layers. The target's config builder sets
`aux_hidden_state_layers = (2, n // 2, n - 3)` for eagle3 (configurations/llama.py:28, kimi_k2.py:82) and the target
captures the residual stream entering those layers (capture-before, models/llama.py:266). A drafter trained on other
layers cannot be served by LMDeploy: the conversion refuses it rather than write a drafter fed the wrong states. The
ids are written (top-level, capture-before) as a record of what it was trained on; the MLA drafter counts them for its
`fc` (it reads `eagle_config`'s first, then the top-level ones).
"""

from __future__ import annotations

from packaging.version import Version

from compat.core.errors import RefusedError

from ._canonical import (
    restore,
    canonical_name,
    NESTED_IDS, TOP_IDS, DrafterConfig, ReadContext, WriteContext, default_layer_ids, hf_config, looks_mla, read_common,
    recorded_layout,
)
from ._declared_ids import read_declared_ids

NAME = "lmdeploy"
ENGINE = "lmdeploy"  # written for LMDeploy's releases (its loaders' names, its config builders' architectures)
DESCRIPTION = "LMDeploy native: midlayer.*, LlamaForCausalLM (renamed to Eagle3LlamaForCausalLM by its config builder), ids not read"
PRIORITY = 52  # recognised only through the record a conversion leaves (it is otherwise the EAGLE layout)

# --- version gates (LMDeploy releases; read in each release's source, tests/probes/test_lmdeploy_releases.py)
EAGLE3 = Version("0.11.0")  # --speculative-algorithm eagle3, Eagle3LlamaForCausalLM (InternLM/lmdeploy#3945)
MLA_DRAFTER = Version("0.17.0")  # kimi_k25_eagle3.py Eagle3DeepseekV2ForCausalLM; KimiK2ModelConfigBuilder sets the layers
LLAMA_ARCHITECTURE = "LlamaForCausalLM"
MLA_ARCHITECTURE = "Eagle3DeepseekV2ForCausalLM"
MLA_MODEL_TYPE = "kimi_k2"


def detect(config: dict, tensor_names: set[str]) -> bool:
    return recorded_layout(config) == NAME


def trainer(config: dict) -> str:
    return "unknown"  # an LMDeploy-native drafter exists only as a conversion; its record names the trainer


to_canonical = canonical_name  # midlayer.* or layers.0.*, with or without model.


def from_canonical(name: str, drafter: DrafterConfig, ctx: WriteContext) -> str | None:
    return "midlayer." + name[len("layers.0."):] if name.startswith("layers.0.") else name


def read_config(config: dict, ctx: ReadContext) -> DrafterConfig:
    ids = read_declared_ids(config, ctx, nested_means=None, top_wins=True,
                            nested_why="LMDeploy reads no drafter ids for the target; an MLA drafter counts eagle_config's")
    return read_common(config, "mla" if looks_mla(config, set()) else "llama", ids, layout=NAME)


def write_config(drafter: DrafterConfig, ctx: WriteContext) -> dict:
    _gate(ctx, EAGLE3, "EAGLE-3 (--speculative-algorithm eagle3)")
    if drafter.num_hidden_layers != 1:
        raise RefusedError(f"LMDeploy's EAGLE-3 drafters have exactly one decoder layer; this drafter has "
                           f"{drafter.num_hidden_layers} (llama_eagle3.py: 'eagle3 only supports 1 decode layer')",
                           hint="serve it on vLLM >= 0.11.1 or SGLang >= 0.5.12, which build several (--to vllm)")
    if drafter.family == "mla":
        _gate(ctx, MLA_DRAFTER, f"the MLA drafter {MLA_ARCHITECTURE} (kimi_k25_eagle3.py)")
        config = hf_config(drafter, architecture=MLA_ARCHITECTURE, model_type=MLA_MODEL_TYPE)
    else:
        config = hf_config(drafter, architecture=LLAMA_ARCHITECTURE, model_type="llama")
        ctx.note(f"architectures: {LLAMA_ARCHITECTURE}, which LMDeploy's config builder renames to Eagle3LlamaForCausalLM "
                 "for eagle3 (it takes no LlamaForCausalLMEagle3)")
    if drafter.norm_before_residual:
        raise RefusedError("the drafter was trained with norm_before_residual: true, which LMDeploy's Eagle3LlamaDecoderLayer "
                           "does not implement (every release): it would run but draft poorly", hint="serve it on vLLM (--to vllm)")
    config.pop("norm_before_residual", None)  # not an LMDeploy field
    _write_layer_ids(config, drafter, ctx)
    ctx.note("tensor names: decoder layer 0 as midlayer.*, no model. prefix (LMDeploy adds it; layers.0.* raise KeyError)")
    return restore(config, drafter, NAME)


def _gate(ctx: WriteContext, gate: Version, what: str) -> None:
    if ctx.at_least(gate) is False:
        raise RefusedError(f"LMDeploy {ctx.engine_version} does not support {what} (from {gate})", hint=f"serve on LMDeploy >= {gate}")
    if ctx.engine_version is None:
        ctx.note(f"{what}: needs LMDeploy >= {gate}")


def _write_layer_ids(config: dict, drafter: DrafterConfig, ctx: WriteContext) -> None:
    ids = drafter.layer_ids.capture_before
    n = ctx.target.num_hidden_layers if ctx.target else None
    fed = default_layer_ids(n) if n else None
    if ids is None:
        ids = fed
        if ids is None:
            ctx.note("layer ids: none declared and no --target: LMDeploy feeds (2, n//2, n-3) of the target's n layers")
            return
    elif fed is None:
        ctx.note(f"layer ids: trained on {ids}; LMDeploy feeds (2, n//2, n-3) whatever the drafter says: pass --target "
                 "to check they are the same layers")
    elif ids != fed:
        raise RefusedError(f"LMDeploy feeds every EAGLE-3 drafter layers {fed} of this {n}-layer target (its config builder "
                           f"sets (2, n//2, n-3); the drafter's ids are never read); this drafter was trained on {ids}",
                           hint="serve it on vLLM >= 0.11.1 or SGLang >= 0.4.9, whose releases read the drafter's ids "
                                "(--to vllm, --to sglang)")
    config[TOP_IDS] = ids
    if drafter.family == "mla":  # its fc is sized by the count of eagle_config's ids (else the top-level ones)
        config["eagle_config"] = {**drafter.eagle_config_extra, "eagle_aux_hidden_state_layer_ids": ids}
        ctx.note(f"layer ids: {TOP_IDS} and {NESTED_IDS} = {ids} (capture-before, the layers LMDeploy feeds; "
                 "the MLA drafter counts them)")
    else:
        ctx.note(f"layer ids: {TOP_IDS} = {ids} (capture-before: a record; LMDeploy feeds (2, n//2, n-3) = {fed or ids})")
