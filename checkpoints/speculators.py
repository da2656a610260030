"""The vllm-project/speculators format (`speculators_model_type: eagle3`), as speculators 0.1.0 - 0.9.0 write it.

Tensors as vLLM native (`layers.{k}.*`, `embed_tokens` kept). Config (speculators/models/eagle3/config.py
`Eagle3SpeculatorConfig` over speculators/config.py `SpeculatorModelConfig`; research
checkpoint-formats.md 2.4): `speculators_model_type`, `architectures ["Eagle3Speculator"]`,
`speculators_version`, `transformer_layer_config` (an HF decoder config carrying the *target* vocab_size;
its model_type picks vLLM's drafter class), `draft_vocab_size`, `norm_before_residual`,
`target_hidden_size`, top-level `eagle_aux_hidden_state_layer_ids` (capture-before: speculators uses
vLLM's semantics), the EAGLE-3.1 flags `norm_before_fc` / `fc_norm` / `norm_output`,
`embed_requires_grad`, and `speculators_config` (algorithm, proposal methods, the verifier), plus what
transformers' PretrainedConfig serialises (`transformers_version`, `dtype`, `auto_map` naming the
`config.py` speculators 0.9 writes beside it, ...).

Reading refuses a speculators_model_type other than eagle3 and any top-level field none of those
versions writes (FIELDS_BY_VERSION), naming it: compat would otherwise drop it silently. Everything the
canonical config does not hold (the proposal methods, embed_requires_grad, the version, auto_map) is
carried, so converting to another layout and back restores it. vLLM reads this format itself (probe
`speculators_format`); SGLang does not.
"""

from __future__ import annotations

from compat.core.errors import RefusedError
from compat.hub import hub_id

from ._canonical import (
    BASIS_LAYOUT, CAPTURE_BEFORE, CONSUMED_KEYS, FLAG_KEYS, TOP_IDS, DrafterConfig, LayerIds, ReadContext,
    WriteContext, canonical_name, carried_from_record, ids_from_declared, optional_int, recorded_layout, require_int,
    restore, target_family,
)

NAME = "speculators"
DESCRIPTION = "vllm-project/speculators 0.1-0.9: speculators_model_type eagle3, transformer_layer_config, speculators_config.verifier"
PRIORITY = 40
SPECULATORS_VERSION = "0.9.0"  # the format version written when the source was not speculators (tests/peers loads it in 0.9.0)
SPECULATIVE_TOKENS = 3  # speculators 0.9's default proposal length
MODEL_TYPES = ("eagle3",)  # the speculators_model_type values this layout reads

# Top-level fields of an eagle3 speculators config.json, by the speculators release that added them
# (Eagle3SpeculatorConfig and SpeculatorModelConfig fields in the 0.1.0, 0.3.0, 0.5.0, 0.7.0 and 0.9.0 wheels).
FIELDS_BY_VERSION = {
    "0.1.0": ("speculators_model_type", "architectures", "speculators_version", "speculators_config",
              "transformer_layer_config", "draft_vocab_size", "norm_before_residual", "target_hidden_size"),
    "0.3.0": ("eagle_aux_hidden_state_layer_ids",),
    "0.5.0": ("norm_before_fc", "embed_requires_grad"),
    "0.7.0": ("fc_norm", "norm_output"),
}
KNOWN_VERSIONS = "speculators 0.1.0 - 0.9.0"
# What transformers' PretrainedConfig (4.x and 5.x) may serialise beside them, and auto_map (config.py).
PRETRAINED_CONFIG_KEYS = (
    "transformers_version", "_name_or_path", "auto_map", "dtype", "torch_dtype", "tie_word_embeddings", "return_dict",
    "output_hidden_states", "output_attentions", "torchscript", "use_bfloat16", "tf_legacy_loss", "pruned_heads",
    "chunk_size_feed_forward", "is_encoder_decoder", "is_decoder", "cross_attention_hidden_size", "add_cross_attention",
    "tie_encoder_decoder", "finetuning_task", "id2label", "label2id", "task_specific_params", "problem_type",
    "tokenizer_class", "prefix", "bos_token_id", "pad_token_id", "eos_token_id", "sep_token_id", "decoder_start_token_id",
)
KNOWN_FIELDS = frozenset(k for keys in FIELDS_BY_VERSION.values() for k in keys) | frozenset(PRETRAINED_CONFIG_KEYS)
# Top-level fields with a canonical meaning (written from the canonical config, never carried).
CANONICAL_TOP = ("draft_vocab_size", "norm_before_residual", "target_hidden_size", TOP_IDS, "transformer_layer_config",
                 "speculators_model_type", *FLAG_KEYS)
LAYER_CONSUMED = ("hidden_size", "num_hidden_layers", "vocab_size")


def detect(config: dict, tensor_names: set[str]) -> bool:
    if recorded_layout(config) is not None:
        return recorded_layout(config) == NAME
    return config.get("speculators_model_type") is not None


def trainer(config: dict) -> str:
    return "speculators"


to_canonical = canonical_name  # midlayer.* or layers.0.*, with or without model.


def from_canonical(name: str, drafter: DrafterConfig, ctx: WriteContext) -> str | None:
    if name in ("d2t", "t2d") and drafter.draft_vocab_size is not None and drafter.draft_vocab_size == drafter.vocab_size:
        return None  # speculators keeps the maps only when the draft vocab is reduced (Eagle3 model: t2d/d2t if Vd != V)
    return name


def known_fields(config: dict) -> None:
    """Refuse what no speculators release this layout knows writes (it would be dropped)."""
    kind = config.get("speculators_model_type")
    if kind not in MODEL_TYPES:
        raise RefusedError(f"config.json: speculators_model_type {kind!r} is not one compat reads "
                           f"({', '.join(MODEL_TYPES)}, as {KNOWN_VERSIONS} write it)",
                           hint="only EAGLE-3 speculators convert; serve other algorithms with speculators' own tools")
    unknown = sorted(k for k in config if k not in KNOWN_FIELDS and not k.startswith("_compat"))
    if unknown:
        raise RefusedError(f"config.json: speculators field {unknown[0]!r} is not one compat knows (the eagle3 fields "
                           f"{KNOWN_VERSIONS} write)" + (f"; also {', '.join(unknown[1:])}" if unknown[1:] else ""),
                           hint="convert with the speculators release that wrote it, or remove the field if it means nothing")
    layer = config.get("transformer_layer_config")
    if not isinstance(layer, dict):
        raise RefusedError("config.json: speculators format without a transformer_layer_config object "
                           f"(every {KNOWN_VERSIONS} config has one)")


def read_config(config: dict, ctx: ReadContext) -> DrafterConfig:
    known_fields(config)
    layer = config["transformer_layer_config"]
    ids = config.get(TOP_IDS)
    if ids is None:
        layer_ids = LayerIds.undeclared("not declared: speculators and vLLM default (2, n//2, n-3) capture-before")
    else:
        layer_ids = (ctx.read_as_told(ids, TOP_IDS) if ctx.convention else
                     ids_from_declared(ids, CAPTURE_BEFORE, TOP_IDS, "speculators uses vLLM's capture-before ids", BASIS_LAYOUT))
    given = config.get("speculators_config")
    spec: dict = given if isinstance(given, dict) else {}
    verifier = spec.get("verifier") or None
    carried = carried_from_record(config)
    # a flag at false says nothing another layout needs (it is the default everywhere): carried, not canonical
    carried[NAME] = {k: v for k, v in config.items()
                     if k in KNOWN_FIELDS and (k not in CANONICAL_TOP or k in FLAG_KEYS and v is False)}
    carried[NAME + ".layer"] = {k: v for k, v in layer.items() if k in CONSUMED_KEYS and k not in LAYER_CONSUMED}
    return DrafterConfig(
        family="llama",
        hidden_size=require_int(layer, "hidden_size", "config.json transformer_layer_config"),
        vocab_size=optional_int(layer, "vocab_size"),
        draft_vocab_size=optional_int(config, "draft_vocab_size"),
        target_hidden_size=optional_int(config, "target_hidden_size"),
        num_hidden_layers=optional_int(layer, "num_hidden_layers") or 1,
        layer_ids=layer_ids,
        torch_dtype=layer.get("torch_dtype") or layer.get("dtype") or config.get("torch_dtype") or config.get("dtype"),
        norm_before_residual=config.get("norm_before_residual", True),  # vLLM's parser default (speculators' own is False)
        flags={k: config[k] for k in FLAG_KEYS if k in config and config[k] is not False},
        fields={k: v for k, v in layer.items() if k not in CONSUMED_KEYS},
        verifier=verifier,
        target_family=target_family(None, verifier.get("architectures")) if verifier and verifier.get("architectures") else None,
        model_type=layer.get("model_type"),
        carried=carried,
    )


def write_config(drafter: DrafterConfig, ctx: WriteContext) -> dict:
    if drafter.family != "llama":
        raise RefusedError("the speculators format has no MLA drafter (vLLM maps it to Eagle3LlamaForCausalLM or the Qwen3 drafter)",
                           hint="use --to vllm or --to mla")
    kept = drafter.carried.get(NAME) or {}
    layer = {  # no architectures: speculators' converter writes none, and vLLM's reader sets its own class
        # vLLM >= 0.24 picks the drafter class by this (llama or qwen3): llama, unless a speculators source said qwen3
        "model_type": "llama",
        **(drafter.carried.get(NAME + ".layer") or {}),
        **drafter.fields,
        "hidden_size": drafter.hidden_size,
        "num_hidden_layers": drafter.num_hidden_layers,
        "vocab_size": drafter.vocab_size,
    }
    if NAME + ".layer" not in drafter.carried:
        layer["tie_word_embeddings"] = False  # a reduced draft vocabulary is never tied to the embedding
    if drafter.torch_dtype:  # spelled as the source did, else as speculators 0.9 (transformers 5) does: dtype
        layer["torch_dtype" if "torch_dtype" in layer and "dtype" not in layer else "dtype"] = drafter.torch_dtype
    spec = dict(kept.get("speculators_config") or {})
    verifier = dict(drafter.verifier or spec.get("verifier") or {})
    if ctx.target is not None:  # a target from the Hugging Face cache is recorded by its hub id, as vLLM takes it
        verifier.setdefault("name_or_path", hub_id(ctx.target.path) or str(ctx.target.path).removesuffix("/config.json"))
        verifier.setdefault("architectures", ctx.target.architectures)
    if not verifier.get("name_or_path"):
        ctx.note("warning: no verifier recorded (pass --target): `vllm serve <drafter>` cannot infer the target")
    spec.setdefault("algorithm", "eagle3")
    spec.setdefault("default_proposal_method", "greedy")
    spec.setdefault("proposal_methods", [{"proposal_type": "greedy", "speculative_tokens": SPECULATIVE_TOKENS,
                                          "verifier_accept_k": 1, "accept_tolerance": 0.0}])
    spec["verifier"] = {"name_or_path": verifier.get("name_or_path"), "architectures": verifier.get("architectures") or []}
    config = {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "speculators_version": SPECULATORS_VERSION,
        **kept,
        "transformer_layer_config": layer,
        "draft_vocab_size": drafter.draft_vocab_size if drafter.draft_vocab_size is not None else drafter.vocab_size,
        # vLLM's speculators parser defaults a missing key to true, speculators' own to false: always write it
        "norm_before_residual": bool(drafter.norm_before_residual),
        "target_hidden_size": drafter.target_hidden_size,
        **drafter.flags,
        "speculators_config": spec,
    }
    from_speculators = NAME in drafter.carried  # then its own fields, as it wrote them; else as speculators 0.9 writes
    if not from_speculators:
        config["tie_word_embeddings"] = False  # PretrainedConfig's field, always written by speculators 0.9
        for flag in ("norm_before_fc", "fc_norm", "norm_output", "embed_requires_grad"):
            config.setdefault(flag, False)  # Eagle3SpeculatorConfig's defaults, which speculators 0.9 always writes
    if drafter.torch_dtype and (not from_speculators or "dtype" in kept or "torch_dtype" in kept):
        config["torch_dtype" if "torch_dtype" in kept and "dtype" not in kept else "dtype"] = drafter.torch_dtype
    ids = drafter.layer_ids.capture_before
    if ids is not None:
        config[TOP_IDS] = ids
        ctx.note(f"layer ids: {TOP_IDS} = {ids} (capture-before, as speculators and vLLM read them)")
    elif NAME in drafter.carried:
        config[TOP_IDS] = None  # speculators writes null: vLLM and speculators then use (2, n//2, n-3)
    return restore(config, drafter, NAME)
