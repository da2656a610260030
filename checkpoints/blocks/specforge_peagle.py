"""SpecForge's P-EAGLE drafter (configs/qwen3-8b-peagle.json): architectures ["PEagleDraftModel"], model_type llama,
draft_vocab_size; an EAGLE-3 drafter with the parallel-drafting tensor mask_hidden. vLLM 0.22.0-0.33.0 registers
PEagleDraftModel; 0.34.0 does not."""

from __future__ import annotations

from compat.methods import architectures

NAME = "specforge-peagle"
DESCRIPTION = "SpecForge PEagleDraftModel (P-EAGLE: EAGLE-3 drafting in parallel)"
FAMILY = "peagle"
TRAINER = "specforge"
SOURCE = "sgl-project/SpecForge configs/qwen3-8b-peagle.json"
PRIORITY = 30


def detect(config: dict, tensor_names: set[str]) -> bool:
    return "PEagleDraftModel" in architectures(config)
