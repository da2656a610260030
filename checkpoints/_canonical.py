"""The canonical drafter every layout reads into and writes from.

Canonical tensor names are the vLLM / speculators spelling without any `model.` prefix:
`layers.{k}.*` for decoder layer k, `fc.weight`, `norm.weight`, `lm_head.weight`,
`embed_tokens.weight`, `d2t`, `t2d`, and the EAGLE-3.1 extras `fc_norm.{i}.weight`,
`input_norm.weight`, `mask_hidden`.

Layer ids are held as *capture-before* indices: the residual stream entering target decoder
layer i, which is HF `hidden_states[i]`. A trainer that hooks the *output* of layer j saw
capture-before j + 1 (research: checkpoint-formats.md section 4.1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import AbstractSet, Literal

from packaging.version import Version

from compat.core.errors import RefusedError
from compat.target import Target, target_family

CAPTURE_BEFORE = "capture-before"
OUTPUT_OF = "output-of"
CONVENTIONS = (CAPTURE_BEFORE, OUTPUT_OF)
CONVENTION_FLAG = "--layer-ids-convention"  # how a user says it, on doctor and convert (checkpoints/_conventions.py declares it)

# The provenance record a conversion writes next to config.json (its format: checkpoints/__init__.py).
# Engines ignore it; layouts and doctor read it to know what the drafter is.
RECORD_FILE = "compat_convert.json"
RECORD_KEY = "_compat_record"  # the record, attached to the config dict handed to layouts
RECORD_SCHEMA = "compat.convert-record/1"

# Why a drafter's layer ids mean what they mean (LayerIds.basis, the record's layer_ids.basis).
BASIS_FLAG = "flag"  # --layer-ids-convention said how to read the declared ids
BASIS_LAYOUT = "layout-default"  # the source layout's rule for that field (e.g. SpecForge's nested ids: output-of)
BASIS_COMMAND_LINE = "command-line"  # --layer-ids (in --layer-ids-convention, default capture-before)
BASIS_ENGINE_DEFAULT = "engine-default"  # none declared: the engines' (2, n//2, n-3) for the --target's n layers
BASIS_UNDECLARED = "undeclared"  # none declared and no --target: the engine's default, unknown here
BASIS_FINGERPRINT = "fingerprint"  # an unambiguous trainer fingerprint (checkpoints/_conventions.py)
BASES = (BASIS_FLAG, BASIS_LAYOUT, BASIS_COMMAND_LINE, BASIS_ENGINE_DEFAULT, BASIS_UNDECLARED, BASIS_FINGERPRINT)

# The trainers a source layout implies (a layout's `trainer(config)` returns one of these ids).
TRAINERS = {
    "specforge-angelslim-eagle": "SpecForge, AngelSlim or SafeAILab EAGLE (midlayer.*, eagle_config ids output-of)",
    "modelopt": "NVIDIA ModelOpt HF export (ids output-of with HF forward hooks, capture-before from a vLLM dump)",
    "modelopt-torchspec-mla": "ModelOpt >= 0.43 or TorchSpec MLA export (Eagle3DeepseekV2ForCausalLM)",
    "speculators": "vllm-project/speculators (capture-before ids)",
    "nemo-automodel": "NVIDIA NeMo-Automodel (recipe aux_layer_ids output-of, not in config.json)",
    "unknown": "not told by the layout (a vLLM- or SGLang-native checkpoint: an export or an earlier conversion)",
}

LLAMA_LAYER0 = (
    "input_layernorm.weight", "hidden_norm.weight", "post_attention_layernorm.weight",
    "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
    "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
)
MLA_LAYER0 = (
    "input_layernorm.weight", "hidden_norm.weight", "post_attention_layernorm.weight",
    "self_attn.q_a_proj.weight", "self_attn.q_a_layernorm.weight", "self_attn.q_b_proj.weight",
    "self_attn.kv_a_proj_with_mqa.weight", "self_attn.kv_a_layernorm.weight", "self_attn.kv_b_proj.weight",
    "self_attn.o_proj.weight",
    "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
)
REQUIRED_TOP = ("fc.weight", "norm.weight", "lm_head.weight")

_CANONICAL = re.compile(
    r"^(layers\.\d+\.(input_layernorm|hidden_norm|post_attention_layernorm)\.weight"
    r"|layers\.\d+\.(self_attn|mlp)\.[a-z_]+\.(weight|bias)"
    r"|fc\.(weight|bias)|norm\.weight|lm_head\.weight|embed_tokens\.weight|d2t|t2d"
    r"|fc_norm\.\d+\.weight|input_norm\.weight|mask_hidden)$"
)
_LAYER = re.compile(r"^layers\.(\d+)\.")
MLA_ARCHITECTURES = ("Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM")
# model_type of an MLA drafter: kimi_k2 maps to DeepseekV3Config in vLLM >= 0.18 and SGLang >= 0.5.12
MLA_MODEL_TYPES = ("kimi_k2", "deepseek_v3", "deepseek_v2")


def is_canonical(name: str) -> bool:
    return bool(_CANONICAL.match(name))


def layer_index(name: str) -> int | None:
    match = _LAYER.match(name)
    return int(match.group(1)) if match else None


def strip_model_prefix(name: str) -> str:
    """Some exporters prefix every key with `model.`; engines would prefix again (model.model.*)."""
    return name[len("model."):] if name.startswith("model.") and not name.startswith("model.lm_head") else name


def canonical_name(name: str) -> str | None:
    """A source tensor name in canonical form (`layers.0.*`), or None when no layout loads it.

    Every trainer and engine spells the decoder layer `midlayer.` or `layers.0.`, with or without
    a `model.` prefix, so reading is the same for all layouts; writing is what differs.
    """
    name = strip_model_prefix(name)
    if name.startswith("midlayer."):
        name = "layers.0." + name[len("midlayer."):]
    return name if is_canonical(name) else None


def looks_mla(config: dict, tensor_names: set[str]) -> bool:
    architectures = config.get("architectures") or []
    return any(a in MLA_ARCHITECTURES for a in architectures) or any(".q_a_proj." in n for n in tensor_names)


def record(config: dict) -> dict | None:
    """The provenance record attached to a drafter config (RECORD_KEY), if any."""
    value = config.get(RECORD_KEY)
    return value if isinstance(value, dict) else None


def compat_record(config: dict) -> dict | None:
    """The record only when it is one this version of the format describes (RECORD_SCHEMA)."""
    rec = record(config)
    return rec if rec is not None and rec.get("schema") == RECORD_SCHEMA else None


def recorded_layout(config: dict) -> str | None:
    rec = record(config)
    return rec.get("layout") if rec else None


# ---------------------------------------------------------------------------------------------


@dataclass
class TargetInfo:
    """The old target summary, kept only for compat/doctor.py until it reads compat.target.Target
    (same attribute names as Target where layouts use them: path, num_hidden_layers, architectures, family)."""

    path: str
    hidden_size: int | None
    vocab_size: int | None
    num_hidden_layers: int | None
    model_type: str | None
    architectures: list[str]
    max_position_embeddings: int | None = None

    @property
    def family(self) -> str:
        return target_family(self.model_type, self.architectures)


def default_layer_ids(num_layers: int) -> list[int]:
    """Both engines' default when a drafter declares nothing: low, middle, high (capture-before)."""
    return [2, num_layers // 2, num_layers - 3]


@dataclass
class LayerIds:
    """The aux hidden-state layers the drafter was trained on, and how we know."""

    capture_before: list[int] | None  # None: not declared, engines use default_layer_ids(n)
    origin: str  # where they came from, in words, for the plan and the record
    declared: list[int] | None = None
    declared_field: str | None = None
    convention: str | None = None  # of `declared`
    basis: str = BASIS_LAYOUT  # why `convention` (one of BASES)

    @classmethod
    def undeclared(cls, why: str) -> "LayerIds":
        return cls(None, why, basis=BASIS_UNDECLARED)


def ids_from_declared(declared: list, convention: str, field_name: str, why: str, basis: str = BASIS_LAYOUT) -> LayerIds:
    ids = int_list(declared, field_name)
    capture_before = [i + 1 for i in ids] if convention == OUTPUT_OF else list(ids)
    return LayerIds(capture_before, f"{field_name} = {ids} read as {convention} ({why})", ids, field_name, convention, basis)


def int_list(value, field_name: str) -> list[int]:
    if not (isinstance(value, (list, tuple)) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise RefusedError(f"config.json {field_name} = {value!r} is not a non-empty list of integers")
    return list(value)


class ConventionNeeded(RefusedError):
    """The declared layer ids cannot be read without the user's word on their convention (--layer-ids-convention)."""


class AmbiguousConvention(ConventionNeeded):
    """The declared layer ids do not say which convention they were written in (the user must say).

    It carries what a caller needs as data: the field, the ids, why they are ambiguous, and (once
    `settle` has tried them) what each reading says the drafter was trained on."""

    def __init__(self, field_name: str, declared: object, why: str) -> None:
        self.field = field_name
        self.declared = declared  # as the config holds it (a list of ints, unless the config is wrong there too)
        self.why = why
        # convention -> the capture-before layers that reading trains on; None: a reading the layout refuses
        # for another reason too (the config has more wrong with it than the convention). Filled by settle().
        self.readings: dict[str, list[int]] | None = None
        super().__init__(
            f"config.json {field_name} = {self.declared} does not say which convention it uses: {why}. "
            "capture-before i = the residual stream entering target layer i (vLLM, speculators); "
            "output-of j = the output of target layer j = capture-before j + 1 (SpecForge, AngelSlim, ModelOpt HF training)",
            hint=f"pass {CONVENTION_FLAG} capture-before|output-of (the convention the drafter was trained with)",
        )


class ConflictingLayerIds(ConventionNeeded):
    """Both id fields are set and name different layers: the convention (which field to read) must be told."""

    def __init__(self, top: list[int], nested: list[int]) -> None:
        self.top, self.nested = list(top), list(nested)
        super().__init__(f"config.json declares {TOP_IDS} = {self.top} but {NESTED_IDS} = {self.nested}: "
                         "they name neither the same layers (top = nested + 1) nor the same numbers",
                         hint=f"pass --layer-ids with the layers the drafter was trained on, and {CONVENTION_FLAG}")


def ambiguous(field_name: str, declared: object, why: str) -> AmbiguousConvention:
    return AmbiguousConvention(field_name, declared, why)


SettledSource = Literal["record", "flag", "fingerprint", "layout", "default"]
_BASIS = {"flag": BASIS_FLAG, "fingerprint": BASIS_FINGERPRINT, "record": BASIS_LAYOUT, "layout": BASIS_LAYOUT,
          "default": BASIS_ENGINE_DEFAULT}


@dataclass(frozen=True)
class Settled:
    """How a drafter's layer ids are known, settled once (checkpoints/_conventions.py `settle`).

    source, in the order they are asked:
      "record"      compat's own provenance record holds the physical layers (`capture_before`);
      "flag"        the user said the convention (--layer-ids-convention);
      "fingerprint" an unambiguous trainer fingerprint fixes the convention;
      "layout"      the layout's own rule for the fields present (both fields agreeing, SpecForge's nested ids);
      "default"     nothing is declared: the engines' default layers for the target's layer count.
    """

    source: SettledSource
    why: str  # in words: the record, the flag, the trainer and its evidence, the layout's reading, the default
    # The convention the declared ids are read in when it is told (flag) or fingerprinted; kept on a "default"
    # settlement too (nothing declared to read), for what reads ids later (a patch's nested-ids convention).
    convention: str | None = None
    capture_before: list[int] | None = None  # the physical layers trained on; None: unknown (no ids, no target)
    ids: LayerIds | None = None  # the layout's reading, when one was made (flag, fingerprint, layout)

    @property
    def imposes(self) -> bool:
        """Does it tell a layout how to read the declared ids (rather than leave it the layout's own rule)?"""
        return self.source in ("flag", "fingerprint") and self.convention is not None

    @property
    def basis(self) -> str:
        """The record's word for it (one of BASES)."""
        return _BASIS[self.source]


def to_output_of(capture_before: list[int], where: str) -> list[int]:
    if any(i < 1 for i in capture_before):
        raise RefusedError(f"{where}: capture-before layer ids {capture_before} include 0 (the embedding output), "
                           "which has no output-of-layer spelling", hint="this destination cannot express these ids; pick another --to")
    return [i - 1 for i in capture_before]


@dataclass
class DrafterConfig:
    """The canonical config: the facts every layout reads and writes."""

    family: str  # "llama" (Llama-style GQA layer) or "mla" (DeepSeek MLA layer)
    hidden_size: int
    vocab_size: int | None  # the target vocabulary (embed_tokens rows, t2d length)
    draft_vocab_size: int | None  # lm_head rows, d2t length
    target_hidden_size: int | None
    num_hidden_layers: int
    layer_ids: LayerIds
    torch_dtype: str | None = None
    norm_before_residual: bool | None = None
    flags: dict = field(default_factory=dict)  # norm_before_fc, fc_norm, norm_output, num_aux_hidden_states ...
    fields: dict = field(default_factory=dict)  # every other architecture field, carried through as is
    eagle_config_extra: dict = field(default_factory=dict)  # ModelOpt flags inside eagle_config
    verifier: dict | None = None  # {name_or_path, architectures} (speculators)
    target_family: str | None = None  # known from the record or the verifier
    model_type: str | None = None  # the source's, kept for MLA drafters (kimi_k2, deepseek_v3)
    # Per layout NAME, the fields of that layout's config that no canonical field holds (speculators'
    # proposal settings, auto_map, transformers_version, ...): kept in the record so that converting
    # back to that layout restores them (a round trip keeps every field either side reads).
    carried: dict[str, dict] = field(default_factory=dict)

    @property
    def aux_count(self) -> int:
        ids = self.layer_ids.capture_before
        return len(ids) if ids else int(self.flags.get("num_aux_hidden_states") or 3)


@dataclass
class ReadContext:
    # How the declared ids are to be read when the user (--layer-ids-convention) or a trainer fingerprint says so;
    # None, or a settlement that imposes nothing (record, layout, default): the layout's own rule.
    told: Settled | None = None
    target: Target | None = None

    @property
    def convention(self) -> str | None:
        return self.told.convention if self.told is not None and self.told.imposes else None

    def read_as_told(self, declared: list, field_name: str) -> LayerIds:
        """`declared` read in the told convention, saying who told it (the flag, a trainer's fingerprint)."""
        assert self.told is not None and self.told.convention is not None
        return ids_from_declared(declared, self.told.convention, field_name, self.told.why, self.told.basis)


@dataclass
class WriteContext:
    engine_version: Version | None  # None: write what every release in the known range loads
    target: Target | None
    notes: list[str] = field(default_factory=list)  # the layout explains its choices here

    def note(self, text: str) -> None:
        self.notes.append(text)

    def family(self, drafter: DrafterConfig) -> str | None:
        if self.target is not None:
            return self.target.family
        return drafter.target_family

    def at_least(self, gate: Version) -> bool | None:
        """True/False for a known release; None when no --engine-version was given."""
        return None if self.engine_version is None else self.engine_version >= gate


FLAG_KEYS = ("norm_before_fc", "fc_norm", "norm_output", "num_aux_hidden_states", "use_aux_norm")
# Keys every layout interprets itself; all other keys are architecture fields carried through.
CONSUMED_KEYS = {
    "architectures", "model_type", "hidden_size", "vocab_size", "draft_vocab_size", "target_hidden_size",
    "num_hidden_layers", "torch_dtype", "dtype", "eagle_config", "eagle_aux_hidden_state_layer_ids",
    "tie_word_embeddings", "norm_before_residual", "transformers_version", "_name_or_path", "auto_map",
    RECORD_KEY, *FLAG_KEYS,
}


def common_fields(config: dict, extra_consumed: AbstractSet[str] = frozenset()) -> dict:
    return {k: v for k, v in config.items() if k not in CONSUMED_KEYS and k not in extra_consumed}


def require_int(config: dict, key: str, where: str = "config.json") -> int:
    value = config.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise RefusedError(f"{where}: {key} = {value!r}, expected a positive integer", hint=f"set {key} in {where}")
    return value


def optional_int(config: dict, key: str) -> int | None:
    value = config.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# Keys an HF-style layout consumes without giving them a canonical meaning: carried per layout.
HF_CARRIED = ("transformers_version", "_name_or_path", "auto_map", "dtype", "torch_dtype")


def carried_from_record(config: dict) -> dict[str, dict]:
    """The fields earlier layouts carried (the record of the conversion that wrote this drafter)."""
    carried = (record(config) or {}).get("carried")
    return {k: dict(v) for k, v in carried.items() if isinstance(v, dict)} if isinstance(carried, dict) else {}


def carry(drafter: DrafterConfig, layout: str, fields: dict) -> DrafterConfig:
    """Keep `fields` of the source's `layout` config (what this read consumed but holds nowhere)."""
    drafter.carried[layout] = {k: v for k, v in fields.items()}
    return drafter


def restore(config: dict, drafter: DrafterConfig, layout: str) -> dict:
    """`config` plus the fields `layout`'s own config had when it was read (never over a key written now).
    The dtype keeps the value written now, in the spelling the source used (`dtype` in transformers 5)."""
    kept = drafter.carried.get(layout) or {}
    for key, value in kept.items():
        if key not in config and key not in ("dtype", "torch_dtype"):
            config[key] = value
    if "dtype" in kept and "torch_dtype" not in kept and "torch_dtype" in config and "dtype" not in config:
        config["dtype"] = config.pop("torch_dtype")
    return config


def read_common(config: dict, family: str, layer_ids: LayerIds, *, extra_consumed: AbstractSet[str] = frozenset(),
                layout: str | None = None) -> DrafterConfig:
    """The fields every non-speculators layout spells the same way (a HF-style flat config)."""
    nested = config.get("eagle_config")
    eagle_config = nested if isinstance(nested, dict) else {}
    flags = {k: config[k] for k in FLAG_KEYS if k in config}
    flags.update({k: eagle_config[k] for k in ("norm_before_fc",) if k in eagle_config and k not in flags})
    rec = record(config) or {}
    return DrafterConfig(
        family=family,
        hidden_size=require_int(config, "hidden_size"),
        vocab_size=optional_int(config, "vocab_size"),
        draft_vocab_size=optional_int(config, "draft_vocab_size"),
        target_hidden_size=optional_int(config, "target_hidden_size"),
        num_hidden_layers=optional_int(config, "num_hidden_layers") or 1,
        layer_ids=layer_ids,
        torch_dtype=config.get("torch_dtype") or config.get("dtype"),
        norm_before_residual=config.get("norm_before_residual"),
        flags=flags,
        fields=common_fields(config, extra_consumed),
        eagle_config_extra={k: v for k, v in eagle_config.items()
                            if k not in ("eagle_aux_hidden_state_layer_ids", "use_aux_hidden_state", "norm_before_fc")},
        target_family=rec.get("target_family"),
        model_type=config.get("model_type"),
        carried={**carried_from_record(config),
                 **({layout: {k: config[k] for k in HF_CARRIED if k in config}} if layout else {})},
    )


def hf_config(drafter: DrafterConfig, *, architecture: str, model_type: str) -> dict:
    """The flat HF-style config both engines read, before layer-id fields are added."""
    config = {
        "architectures": [architecture],
        "model_type": model_type,
        **drafter.fields,
        "hidden_size": drafter.hidden_size,
        "num_hidden_layers": drafter.num_hidden_layers,
        "vocab_size": drafter.vocab_size,
        # vLLM 0.10.x requires draft_vocab_size; SGLang reads null as "borrow the target's head"
        "draft_vocab_size": drafter.draft_vocab_size if drafter.draft_vocab_size is not None else drafter.vocab_size,
        # a tied head with a reduced draft vocab makes SGLang alias lm_head to the full embedding
        "tie_word_embeddings": False,
    }
    if drafter.target_hidden_size is not None:
        config["target_hidden_size"] = drafter.target_hidden_size
    if drafter.torch_dtype is not None:
        config["torch_dtype"] = drafter.torch_dtype
    config.update(drafter.flags)
    # vLLM's speculators parser defaults a missing norm_before_residual to true, its plain parser
    # to false: always write it (checkpoint-formats.md section 5, pitfall 14)
    config["norm_before_residual"] = bool(drafter.norm_before_residual)
    return config


NESTED_IDS = "eagle_config.eagle_aux_hidden_state_layer_ids"
TOP_IDS = "eagle_aux_hidden_state_layer_ids"
# ModelOpt writes these into eagle_config; a ModelOpt id is output-of when the drafter was trained
# on HF forward hooks and capture-before when trained on an offline vLLM dump (checkpoint-formats 2.5).
MODELOPT_FLAGS = ("use_input_layernorm_in_first_layer", "use_last_layernorm", "use_mtp_layernorm",
                  "next_layer_regular", "parallel_draft_step", "parallel_draft_heads_num_layers")


def declared_ids(config: dict) -> tuple[list | None, list | None]:
    nested = config.get("eagle_config")
    eagle_config = nested if isinstance(nested, dict) else {}
    return config.get(TOP_IDS), eagle_config.get("eagle_aux_hidden_state_layer_ids")


def is_modelopt(config: dict) -> bool:
    nested = config.get("eagle_config")
    eagle_config = nested if isinstance(nested, dict) else {}
    return any(flag in eagle_config for flag in MODELOPT_FLAGS)


def mla_model_type(drafter: DrafterConfig) -> str:
    return drafter.model_type if drafter.model_type in MLA_MODEL_TYPES else "kimi_k2"
