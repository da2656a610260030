"""What settles the convention of a drafter's declared layer ids, when the ids do not say it themselves.

An id list is just numbers: [2, 30, 58] is the residual stream entering layers 2, 30, 58
(capture-before: vLLM, speculators) or the output of those layers = capture-before 3, 31, 59
(output-of: SpecForge, AngelSlim, ModelOpt HF training). One reading off means a one-layer shift
that launches fine and silently loses acceptance (vllm#43671). The sources, in order:

1. the provenance record `compat convert ckpt` writes (RECORD_FILE): it holds the physical layers;
2. the user (`--layer-ids-convention`, on doctor and convert);
3. a trainer fingerprint that is unambiguous, each below with the trainer file it comes from.

When none applies the convention is unknown and callers must say so (doctor fails with both
readings, convert refuses), never assume one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ._canonical import CAPTURE_BEFORE, OUTPUT_OF, MODELOPT_FLAGS, RECORD_KEY, strip_model_prefix


@dataclass(frozen=True)
class Fingerprint:
    trainer: str
    convention: str
    evidence: str  # the trainer's file that fixes the convention, and what it does
    matches: Callable[[dict, set[str]], bool]


def _eagle_config(config: dict) -> dict:
    value = config.get("eagle_config")
    return value if isinstance(value, dict) else {}


def _midlayer(names: set[str]) -> bool:
    return any(strip_model_prefix(n).startswith("midlayer.") for n in names)


def _specforge(config: dict, names: set[str]) -> bool:
    nested = _eagle_config(config)
    return (config.get("architectures") == ["LlamaForCausalLMEagle3"] and _midlayer(names)
            and "eagle_aux_hidden_state_layer_ids" in nested and "eagle_aux_hidden_state_layer_ids" not in config
            and not any(flag in nested for flag in MODELOPT_FLAGS) and "_torchspec_version" not in config)


def _torchspec_native(config: dict, names: set[str]) -> bool:
    return "_torchspec_version" in config and _midlayer(names)


def _torchspec_vllm_kimi(config: dict, names: set[str]) -> bool:
    return "_torchspec_version" in config and not _midlayer(names) and config.get("model_type") == "kimi_k2"


def _speculators(config: dict, names: set[str]) -> bool:
    return config.get("speculators_model_type") == "eagle3"


FINGERPRINTS = (
    Fingerprint("vllm-project/speculators", CAPTURE_BEFORE,
                "speculators/models/eagle3/config.py: Eagle3SpeculatorConfig keeps vLLM's ids; "
                "resolve_target_layer_ids defaults to [2, n//2, n-3] capture-before", _speculators),
    Fingerprint("SpecForge", OUTPUT_OF,
                "specforge/modeling/target/eagle3_target_model.py: trains on hidden_states[id + 1] (the output of layer id); "
                "scripts/train_eagle3.py saves midlayer.* with LlamaForCausalLMEagle3 and the ids in eagle_config", _specforge),
    Fingerprint("TorchSpec (native export)", OUTPUT_OF,
                "torchspec tools/convert_to_hf.py: native ids are output-of ([1, 29, 57] for Kimi); writes _torchspec_version",
                _torchspec_native),
    Fingerprint("TorchSpec (--vllm export, kimi_k2)", CAPTURE_BEFORE,
                "torchspec tools/convert_to_hf.py --vllm: renames midlayer. to layers.0. and adds +1 to the ids for "
                "model_type kimi_k2", _torchspec_vllm_kimi),
)


@dataclass(frozen=True)
class Settled:
    """How the drafter's layer ids are known: a convention (for the declared ids) or the physical layers."""

    source: str  # "record" | "flag" | "fingerprint"
    why: str
    convention: str | None = None
    capture_before: list[int] | None = None  # the physical layers, when a record holds them


def settle_convention(config: dict, tensor_names: set[str], flag: str | None = None) -> Settled | None:
    """The first source that settles how to read the drafter's ids, or None (the convention is unknown)."""
    record = config.get(RECORD_KEY) if isinstance(config.get(RECORD_KEY), dict) else {}
    recorded = (record.get("layer_ids") or {}).get("capture_before") if isinstance(record.get("layer_ids"), dict) else None
    if isinstance(recorded, list) and recorded and all(isinstance(i, int) for i in recorded):
        return Settled("record", f"compat convert's record: trained on capture-before {recorded}", capture_before=list(recorded))
    if flag is not None:
        return Settled("flag", f"--layer-ids-convention {flag}", convention=flag)
    for fingerprint in FINGERPRINTS:
        if fingerprint.matches(config, tensor_names):
            return Settled("fingerprint", f"written by {fingerprint.trainer} ({fingerprint.evidence})",
                           convention=fingerprint.convention)
    return None
