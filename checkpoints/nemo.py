"""NVIDIA NeMo-Automodel's EAGLE-3 drafter checkpoint (nemo_automodel 0.7.0, read from its source).

recipes/llm/train_eagle3.py builds the draft config from the *target's* text config (`to_dict()`), so
config.json keeps the target's model_type and `num_hidden_layers` (the draft has one layer unless
`parallel_drafting`), and sets `architectures ["LlamaEagle3DraftModel"]` (for the MLA draft too),
`draft_vocab_size`, `target_hidden_size`, `tie_word_embeddings: false`, `fc_norm`, `norm_output`,
`parallel_drafting`. The model (components/speculative/eagle/draft_llama.py, draft_deepseek.py) wraps
the backbone as `self.model`, so tensors are `model.embed_tokens.weight`, `model.fc.weight`,
`model.layers.0.*`, `model.norm.weight`, `model.fc_norm.{i}.weight`, and top-level `lm_head.weight`,
`d2t`/`t2d` (only when the draft vocab is reduced) and `mask_hidden` (P-EAGLE).

Layer ids are not in config.json: the recipe hooks the *outputs* of `recipe_args.aux_layer_ids`
(components/speculative/eagle/target.py register_forward_hook), default
`default_eagle3_aux_layer_ids(n) = [1, n//2 - 1, n - 4]` output-of = capture-before [2, n//2, n - 3],
the engines' own default, with n the target layers its config.json keeps. A run that set
aux_layer_ids keeps them only in its recipe YAML: pass them with --layer-ids (output-of).
"""

from __future__ import annotations

from compat.core.errors import RefusedError

from ._canonical import (
    BASIS_LAYOUT, NESTED_IDS, OUTPUT_OF, TOP_IDS, DrafterConfig, LayerIds, ReadContext, WriteContext, canonical_name,
    declared_ids, hf_config, looks_mla, mla_model_type, optional_int, read_common, recorded_layout,
    restore, to_output_of,
)
from ._declared_ids import read_declared_ids

NAME = "nemo"
DESCRIPTION = "NeMo-Automodel: LlamaEagle3DraftModel, model.* tensors, the target's num_hidden_layers, ids in its recipe"
PRIORITY = 36
ARCHITECTURE = "LlamaEagle3DraftModel"  # the Automodel class name, written for every EAGLE-3 draft
UNPREFIXED = ("lm_head.weight", "d2t", "t2d", "mask_hidden")  # attributes of the wrapper, not of self.model
NEMO_KEYS = ("fc_norm", "norm_output", "parallel_drafting", "attn_implementation")


def detect(config: dict, tensor_names: set[str]) -> bool:
    if recorded_layout(config) is not None:
        return recorded_layout(config) == NAME
    return ARCHITECTURE in (config.get("architectures") or []) or "model.fc.weight" in tensor_names


def trainer(config: dict) -> str:
    return "nemo-automodel"


to_canonical = canonical_name  # strips the model. prefix


def from_canonical(name: str, drafter: DrafterConfig, ctx: WriteContext) -> str | None:
    if name in ("d2t", "t2d") and drafter.draft_vocab_size is not None and drafter.draft_vocab_size == drafter.vocab_size:
        return None  # the buffers exist only when draft_vocab_size < vocab_size (has_vocab_compression)
    return name if name in UNPREFIXED else "model." + name


def read_config(config: dict, ctx: ReadContext) -> DrafterConfig:
    target_layers = optional_int(config, "num_hidden_layers")
    top, nested = declared_ids(config)
    if top is not None or nested is not None or ctx.convention is not None or ctx.target is None and target_layers is None:
        ids = read_declared_ids(config, ctx, nested_means=OUTPUT_OF, top_wins=False,
                                nested_why="NeMo-Automodel hooks the outputs of its aux layers (eagle/target.py)")
    elif target_layers is not None and target_layers >= 8:
        n = target_layers
        ids = LayerIds([2, n // 2, n - 3],
                       f"NeMo-Automodel's default aux_layer_ids [1, {n // 2 - 1}, {n - 4}] (output-of; its config.json "
                       f"keeps the target's {n} layers and no ids; a run that set recipe_args.aux_layer_ids: pass --layer-ids)",
                       [1, n // 2 - 1, n - 4], "recipe_args.aux_layer_ids (default)", OUTPUT_OF, BASIS_LAYOUT)
    else:
        ids = LayerIds.undeclared("not declared: NeMo-Automodel's default is the engines' (2, n//2, n-3)")
    family = "mla" if looks_mla(config, set()) or "kv_lora_rank" in config else "llama"
    drafter = read_common(config, family, ids, layout=NAME)
    parallel = bool(config.get("parallel_drafting"))
    drafter.num_hidden_layers = (target_layers or 1) if parallel else 1
    drafter.carried[NAME] = {**drafter.carried.get(NAME, {}), "num_hidden_layers": target_layers,
                             **{k: config[k] for k in ("model_type",) if k in config}}
    drafter.fields = {k: v for k, v in drafter.fields.items() if k not in ("parallel_drafting",)}
    for flag in ("fc_norm", "norm_output"):  # the recipe writes both always; false says nothing to another layout
        if drafter.flags.get(flag) is False:
            drafter.carried[NAME][flag] = drafter.flags.pop(flag)
    if drafter.target_hidden_size == drafter.hidden_size:
        drafter.target_hidden_size = None  # the recipe always writes it; equal to hidden_size it says nothing
    if parallel:
        drafter.carried[NAME]["parallel_drafting"] = True
    return drafter


def write_config(drafter: DrafterConfig, ctx: WriteContext) -> dict:
    kept = drafter.carried.get(NAME) or {}
    if drafter.num_hidden_layers != 1 and not kept.get("parallel_drafting"):
        raise RefusedError(f"NeMo-Automodel's EAGLE-3 draft has one layer (more only with parallel_drafting); "
                           f"this drafter has {drafter.num_hidden_layers}", hint="keep it in the vllm or speculators layout")
    model_type = kept.get("model_type") or (mla_model_type(drafter) if drafter.family == "mla" else "llama")
    config = hf_config(drafter, architecture=ARCHITECTURE, model_type=model_type)
    config.pop("norm_before_residual", None)
    if drafter.norm_before_residual:
        raise RefusedError("NeMo-Automodel's EAGLE-3 draft has no norm_before_residual option", hint="keep it in the vllm layout")
    n = kept.get("num_hidden_layers") or (ctx.target.num_hidden_layers if ctx.target else None)
    if n and not kept.get("parallel_drafting"):
        config["num_hidden_layers"] = n  # the recipe keeps the target's count; its draft builds one layer
    for key in ("fc_norm", "norm_output", "parallel_drafting"):
        config.setdefault(key, bool(kept.get(key, False)))
    config.setdefault("target_hidden_size", drafter.target_hidden_size or drafter.hidden_size)
    ids = drafter.layer_ids.capture_before
    if ids is not None and n and ids == [2, n // 2, n - 3]:
        ctx.note(f"layer ids: {ids} is NeMo-Automodel's own default for {n} target layers (written nowhere, as it does)")
    elif ids is not None:
        config[TOP_IDS] = ids
        config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": to_output_of(ids, f"--to {NAME} ({NESTED_IDS})"),
                                  "use_aux_hidden_state": True}
        ctx.note(f"layer ids: NeMo-Automodel reads none from config.json; train or warm-start with recipe_args.aux_layer_ids = "
                 f"{config['eagle_config']['eagle_aux_hidden_state_layer_ids']} (output-of); {TOP_IDS} = {ids} is written for vLLM")
    ctx.note("NeMo-Automodel's warm start (_load_draft_weights) refuses a checkpoint missing model.embed_tokens.weight")
    return restore(config, drafter, NAME)
