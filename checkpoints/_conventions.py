"""What settles the convention of a drafter's declared layer ids, when the ids do not say it themselves.

An id list is just numbers: [2, 30, 58] is the residual stream entering layers 2, 30, 58
(capture-before: vLLM, speculators) or the output of those layers = capture-before 3, 31, 59
(output-of: SpecForge, AngelSlim, ModelOpt HF training). One reading off means a one-layer shift
that launches fine and silently loses acceptance (vllm#43671). The sources, in order:

1. the provenance record `compat convert ckpt` writes (RECORD_FILE): it holds the physical layers
   (unless the conversion itself only filled in the engines' default: that settles nothing);
2. the user: the layers (`--layer-ids`, on doctor) or the convention (`--layer-ids-convention`, on
   doctor and convert; declared once, by `add_flag`);
3. a trainer fingerprint that is unambiguous, each below with the trainer file it comes from;
4. the layout's own rule for the fields present (both fields agreeing, SpecForge's nested ids);
5. nothing declared: the engines feed their default layers, but whether the drafter was trained on
   them is not known (a "default" settlement without layers), unless a trainer fingerprint says
   its trainer uses the same default when given no ids.

`settle` asks them in this order and returns one `Settled` value (its source, the convention or
the physical layers, and why); doctor carries it on its drafter and hands it to convert's Options.
When none applies the convention is unknown: `settle` raises AmbiguousConvention with both
readings as data (doctor fails with both, convert refuses), never assuming one; a drafter that
declares nothing gets `Settled("default")` with no layers, and doctor asks which layers it was
trained on.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from types import ModuleType
from typing import Callable

from compat.core.errors import CompatError
from compat.target import Target


from ._canonical import (
    BASIS_COMMAND_LINE, BASIS_ENGINE_DEFAULT, CAPTURE_BEFORE, CONVENTION_FLAG, CONVENTIONS, OUTPUT_OF, MODELOPT_FLAGS,
    RECORD_KEY, AmbiguousConvention, LayerIds, ReadContext, Settled, default_layer_ids, ids_from_declared,
    strip_model_prefix,
)

LAYER_IDS_FLAG = "--layer-ids"  # the layers a drafter was trained on, when the user knows them (doctor; convert has its own)


@dataclass(frozen=True)
class Citation:
    """A line of a trainer's released code that a fingerprint rests on: where, and the words found there (a test
    reads the released distribution and holds the line to them)."""

    distribution: str  # as the package index names it
    version: str
    path: str  # inside the distribution
    line: int
    text: str  # what that line says (a part of it)

    def __str__(self) -> str:
        return f"{self.distribution} {self.version} {self.path}:{self.line}"


@dataclass(frozen=True)
class Fingerprint:
    trainer: str
    convention: str
    evidence: str  # the trainer's file that fixes the convention, and what it does
    matches: Callable[[dict, set[str]], bool]
    # The trainer's own default when it is given no ids, in the module's (2, n//2, n-3) form: a drafter of it
    # that declares nothing was trained on these layers. False: not known here.
    trains_on_default: bool = False
    cites: tuple[Citation, ...] = ()  # the released lines the evidence rests on

    @property
    def said(self) -> str:
        """The evidence with the lines it rests on, as doctor says it."""
        return self.evidence + "".join(f"; {c}" for c in self.cites)


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


SPECULATORS_CITES = (
    Citation("speculators", "0.9.0", "speculators/models/eagle3/config.py", 53, "eagle_aux_hidden_state_layer_ids"),
    Citation("speculators", "0.9.0", "speculators/models/utils.py", 111,
             "target_layer_ids = [2, num_layers // 2, num_layers - 3]"),
    Citation("speculators", "0.9.0", "speculators/models/utils.py", 116, "ids scripts/launch_vllm.py emits with --include-last-layer"),
)
SPECFORGE_CITES = (
    Citation("specforge", "0.2.0", "specforge/algorithms/model_providers.py", 204,
             "layers = [1, num_layers // 2 - 1, num_layers - 4]"),
    Citation("specforge", "0.2.0", "specforge/offline_capture/sglang_backend/capture.py", 87,
             "set_eagle3_layers_to_capture(layer_ids)"),
)
FINGERPRINTS = (
    Fingerprint("vllm-project/speculators", CAPTURE_BEFORE,
                "Eagle3SpeculatorConfig keeps the ids its hidden states were generated with by vLLM (capture-before); "
                "resolve_target_layer_ids defaults to [2, n//2, n-3] when given none", _speculators, trains_on_default=True,
                cites=SPECULATORS_CITES),
    Fingerprint("SpecForge", OUTPUT_OF,
                "its hidden states come from SGLang's set_eagle3_layers_to_capture, which captures the output of each "
                "id (the default ids [1, n//2 - 1, n - 4] are output-of); it saves midlayer.* with "
                "LlamaForCausalLMEagle3 and the ids in eagle_config", _specforge, cites=SPECFORGE_CITES),
    Fingerprint("TorchSpec (native export)", OUTPUT_OF,
                "torchspec tools/convert_to_hf.py: native ids are output-of ([1, 29, 57] for Kimi); writes _torchspec_version",
                _torchspec_native),
    Fingerprint("TorchSpec (--vllm export, kimi_k2)", CAPTURE_BEFORE,
                "torchspec tools/convert_to_hf.py --vllm: renames midlayer. to layers.0. and adds +1 to the ids for "
                "model_type kimi_k2", _torchspec_vllm_kimi),
)


UNDECLARED_WHY = ("declares no layer ids: the engines feed their default (2, n//2, n-3), but nothing records whether "
                  "it was trained on those layers")


def settle(layout: ModuleType, config: dict, tensor_names: set[str], *, flag: str | None = None,
           target: Target | None = None, layer_ids: list[int] | None = None) -> Settled:
    """How the drafter's layer ids are known, asked once in the module's order: record, the user's layers
    (`layer_ids`, in the `flag` convention, default capture-before), the user's convention, fingerprint, the
    layout's rule, nothing declared. Raises AmbiguousConvention (with what each reading trains on) when
    nothing settles the convention, and the layout's CompatError when it cannot read the config at all."""
    record = _recorded(config)
    if record is not None and record.source == "record":
        return record
    if layer_ids is not None:
        return told_layers(layer_ids, flag)
    if record is not None:  # compat's conversion only filled in the default: still nothing known
        return record
    told = _told(config, tensor_names, flag)
    try:
        ids = read_layer_ids(layout, config, told, target)
    except AmbiguousConvention as err:
        err.readings = _readings(layout, config, target)
        raise
    if ids.capture_before is None:
        fingerprint = _fingerprint(config, tensor_names)
        if fingerprint is not None and fingerprint.trains_on_default and target is not None and target.num_hidden_layers:
            return Settled("fingerprint", f"written by {fingerprint.trainer} ({fingerprint.said}); it declares no ids, "
                           "so it was trained on that default", convention=fingerprint.convention,
                           capture_before=default_layer_ids(target.num_hidden_layers))
        return Settled("default", UNDECLARED_WHY, convention=told.convention if told else None)
    if told is None:
        return Settled("layout", ids.origin, capture_before=ids.capture_before, ids=ids)
    return Settled(told.source, told.why, convention=told.convention, capture_before=ids.capture_before, ids=ids)


def told_layers(layer_ids: list[int], convention: str | None) -> Settled:
    """What the user's --layer-ids settles: the layers trained on, in `convention` (default capture-before)."""
    ids = ids_from_declared(layer_ids, convention or CAPTURE_BEFORE, LAYER_IDS_FLAG, "given on the command line",
                            BASIS_COMMAND_LINE)
    return Settled("flag", f"{LAYER_IDS_FLAG} {' '.join(map(str, layer_ids))}" + (f" {CONVENTION_FLAG} {convention}" if convention else ""),
                   convention=convention, capture_before=ids.capture_before, ids=ids)


def from_flag(convention: str | None) -> Settled | None:
    """What the user's --layer-ids-convention settles (None: not given)."""
    return None if convention is None else Settled("flag", CONVENTION_FLAG, convention=convention)


def read_layer_ids(layout: ModuleType, config: dict, told: Settled | None, target: Target | None) -> LayerIds:
    """The layout's reading of the declared ids, in the `told` convention when it imposes one."""
    layer_ids: LayerIds = layout.read_config(config, ReadContext(told, target)).layer_ids
    return layer_ids


def _recorded(config: dict) -> Settled | None:
    """What compat's own record says: the physical layers ("record"), or that its conversion found none declared
    and wrote the engines' default ("default": nothing known; a later reading of those ids must not settle it)."""
    record = config.get(RECORD_KEY)
    layer_ids = record.get("layer_ids") if isinstance(record, dict) else None
    if not isinstance(layer_ids, dict):
        return None
    if layer_ids.get("basis") == BASIS_ENGINE_DEFAULT:
        return Settled("default", f"compat convert's record: the source {UNDECLARED_WHY}; the conversion wrote that default")
    recorded = layer_ids.get("capture_before")
    if isinstance(recorded, list) and recorded and all(isinstance(i, int) for i in recorded):
        return Settled("record", f"compat convert's record: trained on capture-before {recorded}", capture_before=list(recorded))
    return None


def _told(config: dict, tensor_names: set[str], flag: str | None) -> Settled | None:
    """What settles the convention of the declared ids before any layout reads them: the user's flag, a fingerprint."""
    if flag is not None:
        return from_flag(flag)
    fingerprint = _fingerprint(config, tensor_names)
    if fingerprint is not None:
        return Settled("fingerprint", f"written by {fingerprint.trainer} ({fingerprint.said})", convention=fingerprint.convention)
    return None


def _fingerprint(config: dict, tensor_names: set[str]) -> Fingerprint | None:
    return next((f for f in FINGERPRINTS if f.matches(config, tensor_names)), None)


def _readings(layout: ModuleType, config: dict, target: Target | None) -> dict[str, list[int]] | None:
    """What each convention, if told, says the drafter was trained on; None when a reading fails for
    another reason too (then asking the user for the convention would not be enough)."""
    readings: dict[str, list[int]] = {}
    for convention in CONVENTIONS:
        try:
            ids = read_layer_ids(layout, config, from_flag(convention), target).capture_before
        except CompatError:
            return None
        if ids is None:
            return None
        readings[convention] = list(ids)
    return readings


def add_layer_ids_flag(parser: argparse.ArgumentParser) -> None:
    """--layer-ids on doctor: the layers the drafter was trained on, for a drafter that does not say (convert
    declares its own, which also decides what it writes)."""
    parser.add_argument(LAYER_IDS_FLAG, metavar="IDS", nargs="+", type=_ids_word,
                        help="the target layers the drafter was trained on (e.g. 2 30 58 or 2,30,58), in "
                        f"{CONVENTION_FLAG} (default capture-before); needed when the drafter declares none: doctor "
                        "then checks them against the layers the release feeds")


def layer_ids_arg(values: list[list[int]] | None) -> list[int] | None:
    """The --layer-ids words, flattened (`2 30 58` or `2,30,58`)."""
    return None if not values else [i for word in values for i in word]


def _ids_word(word: str) -> list[int]:
    try:
        ids = [int(part) for part in word.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{word!r} is not a layer id (whole numbers, e.g. 2 30 58 or 2,30,58)") from None
    if not ids or any(i < 0 for i in ids):
        raise argparse.ArgumentTypeError(f"{word!r}: layer ids are whole numbers >= 0")
    return ids


def add_flag(parser: argparse.ArgumentParser, *, also: str = "") -> None:
    """--layer-ids-convention, declared once for every command that reads a drafter's ids (doctor, convert)."""
    parser.add_argument(CONVENTION_FLAG, choices=CONVENTIONS,
                        help=f"how the drafter's declared layer ids{also} were written, needed when nothing in the drafter "
                        "says so: output-of (SpecForge, AngelSlim, ModelOpt HF training) or capture-before (vLLM, "
                        "speculators); the same flag and values on compat doctor and compat convert ckpt")
