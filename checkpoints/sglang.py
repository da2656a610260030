"""SGLang native layout, per release: what `--speculative-algorithm EAGLE3 --speculative-draft-model-path` loads.

Tensors: the decoder layer under `midlayer.` (every release loads it; releases before 0.5.12 skip
`layers.0.*` silently and the layer stays random), `fc`, `norm`, `lm_head`, `d2t`, `t2d` (skipped),
optional `embed_tokens` (replaced by the target's). Config: `LlamaForCausalLMEagle3` (SGLang
registers no `Eagle3LlamaForCausalLM`), ids only in `eagle_config`, offset by the target model's
`set_eagle3_layers_to_capture` (research sglang-eagle3.md 2.2, 3; checkpoint-formats.md 3.2, 4).

The offset rule, by release and target family (capture-before index = what the engine feeds):
  Llama / Qwen / GPT-OSS / ... targets, 0.4.9+:              declared + 1
  DeepSeek / Kimi targets, 0.5.4.post2 - 0.5.12.post1:       declared + 1
  DeepSeek / Kimi targets, 0.5.13+ (sgl-project/sglang#25454): declared + 1 if declared[0] == 1, else declared
Written: the spelling every applicable rule maps to the trained layers, preferring
`capture_before - 1` (valid on every release when the first id becomes 1, as for the default set).
"""

from __future__ import annotations

from typing import Callable

from packaging.version import Version

from compat.core.errors import RefusedError

from ._canonical import (
    restore,
    canonical_name, BASIS_FLAG,
    CAPTURE_BEFORE, NESTED_IDS, OUTPUT_OF, DrafterConfig, LayerIds, ReadContext, WriteContext, declared_ids,
    default_layer_ids, hf_config, ids_from_declared, read_common, record, recorded_layout, looks_mla, mla_model_type, int_list, ambiguous,
)

NAME = "sglang"
ENGINE = "sglang"  # written for SGLang's releases (its loader's names, its config keys)
DESCRIPTION = "SGLang native, per release: midlayer.*, LlamaForCausalLMEagle3, ids in eagle_config with the release's offset"
PRIORITY = 50  # recognised only through the record a conversion leaves (it is otherwise the EAGLE layout)
LLAMA_ARCHITECTURE = "LlamaForCausalLMEagle3"
MLA_ARCHITECTURE = "Eagle3DeepseekV2ForCausalLM"

# --- version gates (SGLang releases)
READS_LAYER_IDS = Version("0.4.9")  # set_eagle3_layers_to_capture(layer_ids) takes ids; before: defaults only
DEEPSEEK_TARGET_CAPTURE = Version("0.5.4.post2")  # DeepseekV2ForCausalLM.set_eagle3_layers_to_capture appears
CONDITIONAL_DEEPSEEK_OFFSET = Version("0.5.13")  # DeepSeek/Kimi: +1 only when ids[0] == 1
LOADS_LAYERS_0 = Version("0.5.12")  # legacy_name_map midlayer -> layers.0; before, layers.0.* dropped silently
MULTI_LAYER = Version("0.5.12")  # "EAGLE3 currently only supports 1 layer" removed (Llama drafter)
MLA_DRAFTER = Version("0.5.12")  # kimi_k25_eagle3.py Eagle3DeepseekV2ForCausalLM; kimi_k2 model_type alias
FC_NORM = Version("0.5.12")  # fc_norm / use_aux_norm, norm_output, num_aux_hidden_states
NORM_BEFORE_FC = Version("0.5.17")  # input_norm over the concatenated aux states


def _plus_one(ids: list[int]) -> list[int]:
    return [i + 1 for i in ids]


def _conditional(ids: list[int]) -> list[int]:
    return [i + 1 for i in ids] if ids[0] == 1 else list(ids)


def offset_rules(version: Version | None, family: str | None) -> dict[str, Callable[[list[int]], list[int]]]:
    """The rules that may apply: one when release and target family are known, else every candidate."""
    rules: dict[str, Callable[[list[int]], list[int]]] = {}
    before_conditional = version is None or version < CONDITIONAL_DEEPSEEK_OFFSET
    if family in ("llama", None) or before_conditional:
        rules["+1"] = _plus_one
    if family in ("deepseek", None) and not (version is not None and version < CONDITIONAL_DEEPSEEK_OFFSET):
        rules["+1 if ids[0] == 1 (DeepSeek/Kimi targets, >= 0.5.13)"] = _conditional
    return rules


def engine_capture(declared: list[int], version: Version | None, family: str | None) -> list[int] | None:
    """What SGLang feeds the drafter for `declared`, or None when the rules that may apply disagree."""
    results = {tuple(rule(declared)) for rule in offset_rules(version, family).values()}
    return list(results.pop()) if len(results) == 1 else None


def declare_for(capture_before: list[int], version: Version | None, family: str | None) -> list[int] | None:
    rules = offset_rules(version, family).values()
    for candidate in ([i - 1 for i in capture_before], list(capture_before)):
        if min(candidate) >= 0 and all(rule(candidate) == capture_before for rule in rules):
            return candidate
    return None


def detect(config: dict, tensor_names: set[str]) -> bool:
    return recorded_layout(config) == NAME


def trainer(config: dict) -> str:
    return "unknown"  # an SGLang-native drafter exists only as a conversion; its record names the trainer


to_canonical = canonical_name  # midlayer.* or layers.0.*, with or without model.


def from_canonical(name: str, drafter: DrafterConfig, ctx: WriteContext) -> str | None:
    return "midlayer." + name[len("layers.0."):] if name.startswith("layers.0.") else name


def read_config(config: dict, ctx: ReadContext) -> DrafterConfig:
    family = "mla" if looks_mla(config, set()) else "llama"
    _, nested = declared_ids(config)
    rec = record(config) or {}
    if nested is None:
        ids = LayerIds.undeclared("not declared: SGLang's default (2, n//2, n-3) capture-before applies")
    elif ctx.convention is not None:
        ids = ctx.read_as_told(nested, NESTED_IDS)
    else:
        declared = int_list(nested, NESTED_IDS)
        version = Version(rec["engine_version"]) if rec.get("engine_version") else None
        target = ctx.target.family if ctx.target else rec.get("target_family")
        captured = engine_capture(declared, version, target)
        if captured is None:
            raise ambiguous(NESTED_IDS, declared, "SGLang >= 0.5.13 reads ids whose first entry is not 1 as capture-before "
                                                  "for DeepSeek/Kimi targets and adds +1 everywhere else; the release and "
                                                  "target it was written for are unknown (pass --target)")
        where = f"SGLang {version or 'any release'} with a {target or 'any'} target"
        convention = OUTPUT_OF if captured == _plus_one(declared) else CAPTURE_BEFORE
        ids = LayerIds(captured, f"{NESTED_IDS} = {declared} as {where} reads it", declared, NESTED_IDS, convention)
    drafter = read_common(config, family, ids, layout=NAME)
    drafter.target_family = drafter.target_family or (ctx.target.family if ctx.target else None)
    return drafter


def write_config(drafter: DrafterConfig, ctx: WriteContext) -> dict:
    if drafter.norm_before_residual:
        raise RefusedError("the drafter was trained with norm_before_residual: true, which SGLang does not implement "
                           "(every release): it would run but draft poorly", hint="serve it on vLLM (--to vllm)")
    if drafter.family == "mla":
        _gate(ctx, MLA_DRAFTER, "the MLA drafter Eagle3DeepseekV2ForCausalLM (kimi_k25_eagle3.py)")
        if drafter.num_hidden_layers != 1:
            raise RefusedError(f"SGLang's MLA drafter has exactly one layer; this drafter has {drafter.num_hidden_layers}")
        config = hf_config(drafter, architecture=MLA_ARCHITECTURE, model_type=mla_model_type(drafter))
    else:
        if drafter.num_hidden_layers > 1:
            _gate(ctx, MULTI_LAYER, f"drafters with {drafter.num_hidden_layers} layers")
        config = hf_config(drafter, architecture=LLAMA_ARCHITECTURE, model_type="llama")
    for flag, gate in (("fc_norm", FC_NORM), ("use_aux_norm", FC_NORM), ("norm_output", FC_NORM), ("norm_before_fc", NORM_BEFORE_FC)):
        if drafter.flags.get(flag):
            _gate(ctx, gate, f"{flag}: true")
    config.pop("norm_before_residual", None)  # not an SGLang field; false is its only behaviour
    ctx.note(f"tensor names: decoder layer 0 as midlayer.* (SGLang before {LOADS_LAYERS_0} drops layers.0.* silently)")
    config["eagle_config"] = {**drafter.eagle_config_extra, "use_aux_hidden_state": True}
    _write_layer_ids(config, drafter, ctx)
    return restore(config, drafter, NAME)


def _gate(ctx: WriteContext, gate: Version, what: str) -> None:
    if ctx.at_least(gate) is False:
        raise RefusedError(f"SGLang {ctx.engine_version} does not support {what} (from {gate})", hint=f"serve on SGLang >= {gate}")
    if ctx.engine_version is None:
        ctx.note(f"{what}: needs SGLang >= {gate}")


def _write_layer_ids(config: dict, drafter: DrafterConfig, ctx: WriteContext) -> None:
    ids = drafter.layer_ids.capture_before
    version, family = ctx.engine_version, ctx.family(drafter)
    if family == "deepseek" and ctx.at_least(DEEPSEEK_TARGET_CAPTURE) is False:
        raise RefusedError(f"SGLang {version} cannot capture aux hidden states from a DeepSeek/Kimi target "
                           f"(DeepseekV2ForCausalLM.set_eagle3_layers_to_capture arrives in {DEEPSEEK_TARGET_CAPTURE})",
                           hint=f"serve on SGLang >= {DEEPSEEK_TARGET_CAPTURE}")
    if ids is None:
        ctx.note("layer ids: none declared and no --target to compute the default: SGLang uses (2, n//2, n-3)")
        return
    if ctx.at_least(READS_LAYER_IDS) is False:
        n = ctx.target.num_hidden_layers if ctx.target else None
        if n is None or ids != default_layer_ids(n):
            raise RefusedError(f"SGLang {version} ignores drafter layer ids (always (2, n//2, n-3)); this drafter was trained on {ids}",
                               hint=f"serve on SGLang >= {READS_LAYER_IDS}")
    declared = declare_for(ids, version, family)
    if declared is None:
        rules = ", ".join(offset_rules(version, family))
        if version is None or family is None:
            missing = " or ".join(x for x, unknown in (("--target (its model family)", family is None),
                                                       ("--engine-version", version is None)) if unknown)
            raise RefusedError(f"no single eagle_config id list makes every SGLang release and target family that may apply "
                               f"(offset rules: {rules}) capture layers {ids}", hint=f"pass {missing} so one rule applies")
        raise RefusedError(f"SGLang {version} with a {family} target cannot capture layers {ids}: the offset rule ({rules}) "
                           "maps no declared list onto them", hint="pick another engine release, or retrain on other layers")
    config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = declared
    where = f"SGLang {version}" if version else "every SGLang release"
    ctx.note(f"layer ids: {NESTED_IDS} = {declared}; {where} ({', '.join(offset_rules(version, family))}) "
             f"with a {family or 'Llama or DeepSeek'} target captures {ids}")
