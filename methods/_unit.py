"""The vocabulary a method file declares itself in (re-exported by compat.methods; import it from there).

A method file holds what compat knows about one family of speculative-decoding methods that the engines'
code cannot say by itself: which of an engine's method names belong to the family, which trainers write its
drafters and how those drafters are recognised, what the ids a trainer writes mean, the block rule its
drafters were trained with, what the target and the serving venv need. What a *release* does with a name
(whether it accepts it, which key it reads at which offset, which classes load the drafter) is read from the
release's source by the probes (`compat probe`: the `methods` fact), never declared here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from compat.method_name import Name  # noqa: F401  (an engine's name for a family: the engine units declare them)

CAPTURE_BEFORE = "capture-before"  # id i: the residual stream entering target layer i (HF hidden_states[i])
OUTPUT_OF = "output-of"  # id i: the output of target layer i (HF hidden_states[i + 1])


@dataclass(frozen=True)
class LayerIdKey:
    """Where a trainer writes the target layers its drafter was trained on, and what its ids mean.

    `convention` is how the *trainer* indexed them (capture-before or output-of); each release reads the key
    at its own offset, which the probe reads from the release (the layer-ids check compares the two)."""

    key: str  # "dflash_config.target_layer_ids", "aux_hidden_state_layer_ids" (a dot: nested one level)
    convention: str
    writers: tuple[str, ...]  # trainer ids of TRAINERS
    source: str  # where the trainer's code says so (repository, file and line)

    @property
    def where(self) -> str:
        """`dflash_config` for a nested key, "top-level" otherwise (the probe's spelling)."""
        return self.key.split(".", 1)[0] if "." in self.key else "top-level"

    @property
    def leaf(self) -> str:
        return self.key.rsplit(".", 1)[-1]

    def value(self, config: Mapping[str, Any]) -> list[int] | None:
        where = self.where
        holder = config if where == "top-level" else config.get(where)
        value = holder.get(self.leaf) if isinstance(holder, Mapping) else None
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return list(value)
        return None

    def capture_before(self, config: Mapping[str, Any]) -> list[int] | None:
        """The layers trained on, capture-before (an output-of id i is the stream entering layer i + 1)."""
        ids = self.value(config)
        if ids is None:
            return None
        return [i + 1 for i in ids] if self.convention == OUTPUT_OF else ids


@dataclass(frozen=True)
class BlockRule:
    """How a block drafter lays out its draft block, and the key that tells an engine which layout it has.

    `anchor_key` (sample_from_anchor): true, the block is gamma slots wide and the anchor slot is itself a
    prediction (DeepSpec's layout); false, the block is gamma + 1 wide and slot 0 is the bonus token, never a
    prediction (DFlash's and speculators' layout). `trainers` says what each trainer trains when its config
    leaves the key out (sglang#30982)."""

    size_key: str  # "block_size"
    anchor_key: str | None = None  # "sample_from_anchor"
    native: bool = False  # the layout a release that reads no anchor key assumes (True: anchor-first, gamma wide)
    trainers: Mapping[str, bool] = field(default_factory=dict)  # trainer id -> the anchor layout it trains
    sources: Mapping[str, str] = field(default_factory=dict)  # trainer id -> where its code says so
    threads: tuple[str, ...] = ()


@dataclass(frozen=True)
class VenvPackage:
    """A package the serving venv must hold for the method that is not among the engine's dependencies."""

    module: str  # the import name the engine looks for ("arctic_inference")
    distribution: str  # what to pip install ("arctic-inference")


@dataclass(frozen=True)
class Recognition:
    """A drafter recognised as trained for a family: by which trainer, from which keys or tensors."""

    family: str
    trainer: str  # an id of TRAINERS, or "unknown"
    evidence: str  # the keys, architectures or tensors that decided it, in words
    certain: bool = True  # False: only a weak sign (a plain causal LM may be a draft model or anything else)


# The trainers a method file names (a LayerIdKey's writers, a Recognition's trainer).
TRAINERS = {
    "specforge": "SpecForge (sgl-project/SpecForge)",
    "z-lab-dflash": "z-lab's dflash (z-lab/dflash)",
    "speculators": "vllm-project/speculators",
    "modelopt": "NVIDIA ModelOpt (Model-Optimizer)",
    "deepspec": "DeepSpec (the DSpark reference checkpoints, e.g. deepseek-ai/dspark_qwen3_8b_block7)",
    "safeailab-eagle": "SafeAILab EAGLE",
    "target-checkpoint": "shipped inside the target checkpoint (MTP heads)",
    "unknown": "not told by the checkpoint",
}


def architectures(config: Mapping[str, Any]) -> list[str]:
    archs = config.get("architectures")
    return [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []


def speculators_type(config: Mapping[str, Any]) -> str | None:
    """The speculators format's algorithm (`speculators_model_type`), when the config is one."""
    value = config.get("speculators_model_type")
    return value if isinstance(value, str) else None
