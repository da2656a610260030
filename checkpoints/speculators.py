"""The vllm-project/speculators format (`speculators_model_type: eagle3`).

Tensors as vLLM native (`layers.{k}.*`). Config (speculators/models/eagle3/config.py,
research checkpoint-formats.md 2.4): `speculators_model_type`, `architectures ["Eagle3Speculator"]`,
`transformer_layer_config` (a Llama decoder config carrying the *target* vocab_size),
`draft_vocab_size`, `norm_before_residual`, `target_hidden_size`, top-level
`eagle_aux_hidden_state_layer_ids` (capture-before: speculators uses vLLM's semantics) and
`speculators_config` with its `verifier`. vLLM reads this format from 0.10.2; SGLang does not.
"""

from __future__ import annotations

from compat.errors import RefusedError
from compat.hub import hub_id

from ._canonical import (
    canonical_name, BASIS_FLAG, BASIS_LAYOUT,
    CONSUMED_KEYS, FLAG_KEYS, TOP_IDS, DrafterConfig, LayerIds, ReadContext, WriteContext, ids_from_declared, optional_int, recorded_layout, require_int, target_family, CAPTURE_BEFORE,
)

NAME = "speculators"
DESCRIPTION = "vllm-project/speculators: speculators_model_type eagle3, transformer_layer_config, speculators_config.verifier"
PRIORITY = 40
SPECULATORS_VERSION = "0.3.0"  # the format version written; vLLM's parser ignores it
SPECULATIVE_TOKENS = 3  # speculators 0.9's default proposal length


def detect(config: dict, tensor_names: set[str]) -> bool:
    if recorded_layout(config) is not None:
        return recorded_layout(config) == NAME
    return config.get("speculators_model_type") is not None


def trainer(config: dict) -> str:
    return "speculators"


to_canonical = canonical_name  # midlayer.* or layers.0.*, with or without model.


def from_canonical(name: str, drafter: DrafterConfig, ctx: WriteContext) -> str | None:
    return name


def read_config(config: dict, ctx: ReadContext) -> DrafterConfig:
    if config.get("speculators_model_type") != "eagle3":
        raise RefusedError(f"config.json: speculators_model_type {config.get('speculators_model_type')!r} is not an EAGLE-3 drafter",
                           hint="only eagle3 speculators convert")
    layer = config.get("transformer_layer_config")
    if not isinstance(layer, dict):
        raise RefusedError("config.json: speculators format without a transformer_layer_config object")
    ids = config.get(TOP_IDS)
    if ids is None:
        layer_ids = LayerIds.undeclared("not declared: speculators and vLLM default (2, n//2, n-3) capture-before")
    else:
        layer_ids = (ctx.read_as_told(ids, TOP_IDS) if ctx.convention else
                     ids_from_declared(ids, CAPTURE_BEFORE, TOP_IDS, "speculators uses vLLM's capture-before ids", BASIS_LAYOUT))
    verifier = (config.get("speculators_config") or {}).get("verifier") or None
    return DrafterConfig(
        family="llama",
        hidden_size=require_int(layer, "hidden_size", "config.json transformer_layer_config"),
        vocab_size=optional_int(layer, "vocab_size"),
        draft_vocab_size=optional_int(config, "draft_vocab_size"),
        target_hidden_size=optional_int(config, "target_hidden_size"),
        num_hidden_layers=optional_int(layer, "num_hidden_layers") or 1,
        layer_ids=layer_ids,
        torch_dtype=layer.get("torch_dtype") or config.get("torch_dtype"),
        norm_before_residual=config.get("norm_before_residual", True),  # vLLM's parser default
        flags={k: config[k] for k in FLAG_KEYS if k in config},
        fields={k: v for k, v in layer.items() if k not in CONSUMED_KEYS},
        verifier=verifier,
        target_family=target_family(None, verifier.get("architectures")) if verifier and verifier.get("architectures") else None,
        model_type=layer.get("model_type"),
    )


def write_config(drafter: DrafterConfig, ctx: WriteContext) -> dict:
    if drafter.family != "llama":
        raise RefusedError("the speculators format has no MLA drafter (vLLM maps it to Eagle3LlamaForCausalLM or the Qwen3 drafter)",
                           hint="use --to vllm or --to mla")
    layer = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",  # vLLM >= 0.24 picks the drafter class by this: llama or qwen3
        **drafter.fields,
        "hidden_size": drafter.hidden_size,
        "num_hidden_layers": drafter.num_hidden_layers,
        "vocab_size": drafter.vocab_size,
        "tie_word_embeddings": False,
    }
    if drafter.torch_dtype:
        layer["torch_dtype"] = drafter.torch_dtype
    verifier = dict(drafter.verifier or {})
    if ctx.target is not None:  # a target from the Hugging Face cache is recorded by its hub id, as vLLM takes it
        verifier.setdefault("name_or_path", hub_id(ctx.target.path) or str(ctx.target.path).removesuffix("/config.json"))
        verifier.setdefault("architectures", ctx.target.architectures)
    if not verifier.get("name_or_path"):
        ctx.note("warning: no verifier recorded (pass --target): `vllm serve <drafter>` cannot infer the target")
    config = {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "speculators_version": SPECULATORS_VERSION,
        "transformer_layer_config": layer,
        "draft_vocab_size": drafter.draft_vocab_size if drafter.draft_vocab_size is not None else drafter.vocab_size,
        # vLLM's speculators parser defaults a missing key to true: always write it
        "norm_before_residual": bool(drafter.norm_before_residual),
        "target_hidden_size": drafter.target_hidden_size,
        **drafter.flags,
        "speculators_config": {
            "algorithm": "eagle3",
            "default_proposal_method": "greedy",
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": SPECULATIVE_TOKENS,
                                  "verifier_accept_k": 1, "accept_tolerance": 0.0}],
            "verifier": {"name_or_path": verifier.get("name_or_path"), "architectures": verifier.get("architectures") or []},
        },
    }
    if drafter.torch_dtype:
        config["torch_dtype"] = drafter.torch_dtype
    ids = drafter.layer_ids.capture_before
    if ids is not None:
        config[TOP_IDS] = ids
        ctx.note(f"layer ids: {TOP_IDS} = {ids} (capture-before, as speculators and vLLM read them)")
    return config
