"""A small vLLM-shaped tree (the speculative config, its builder) written by the tests of the guard reader, the
spec_validation probe and the release-validation check, and its fact as the probe reads it. The code is written the
way vLLM writes it (a pydantic dataclass with bounds, `__post_init__`, an "after" validator, a static helper, a
Literal alias read with get_args, a model config built from the drafter's path); the real releases are read by
tests/probes/test_vllm_spec_validation.py and judged against their own builds by tests/engine.
"""

from __future__ import annotations

from pathlib import Path

SPECULATIVE = '''
from typing import Literal, get_args

from pydantic import Field, model_validator

MTPModelTypes = Literal["deepseek_mtp", "mtp"]
SpeculativeMethod = Literal["ngram", "eagle3", "draft_model", "suffix", MTPModelTypes]


@config
class SpeculativeConfig:
    num_speculative_tokens: int = Field(default=None, gt=0)
    model: str | None = None
    method: SpeculativeMethod | None = None
    draft_tensor_parallel_size: int | None = Field(default=None, ge=1)
    prompt_lookup_max: int | None = None
    prompt_lookup_min: int | None = None
    target_model_config: ModelConfig = None
    target_parallel_config: ParallelConfig = None
    draft_model_config: ModelConfig = None

    def __post_init__(self):
        if self.method in get_args(MTPModelTypes) and self.method != "mtp":
            logger.warning("method `%s` is deprecated and replaced with mtp.", self.method)
            self.method = "mtp"
        if self.method == "ngram":
            if self.prompt_lookup_min is None:
                self.prompt_lookup_min = 5
            if self.prompt_lookup_max is None:
                self.prompt_lookup_max = 5
            if self.prompt_lookup_min > self.prompt_lookup_max:
                raise ValueError(
                    f"prompt_lookup_min={self.prompt_lookup_min} must be <= prompt_lookup_max={self.prompt_lookup_max}"
                )
        elif self.method == "suffix":
            if not has_arctic_inference():
                raise ImportError("Arctic Inference is required for suffix decoding.")
        elif self.model is not None:
            self.draft_model_config = ModelConfig(model=self.model)
            if self.method is None:
                if "eagle3" in self.draft_model_config.model.lower():
                    self.method = "eagle3"
                else:
                    self.method = "draft_model"
            n_predict = getattr(self.draft_model_config.hf_config, "n_predict", None)
            if n_predict is not None and self.num_speculative_tokens is None:
                self.num_speculative_tokens = n_predict
            if self.num_speculative_tokens is None:
                raise ValueError("A speculative model was provided, but `num_speculative_tokens` was not provided")
            self.draft_tensor_parallel_size = SpeculativeConfig._verify_tp(
                self.target_parallel_config, self.draft_tensor_parallel_size)

    @staticmethod
    def _verify_tp(target_parallel_config, size):
        if size is None:
            return target_parallel_config.tensor_parallel_size
        if size not in (1, target_parallel_config.tensor_parallel_size):
            raise ValueError(f"{size=} cannot be other value than 1 or target model tensor_parallel_size")
        return size

    @model_validator(mode="after")
    def _verify_args(self):
        if self.num_speculative_tokens is None:
            raise ValueError("num_speculative_tokens must be provided with speculative model")
        return self
'''

ARG_UTILS = '''
from dataclasses import dataclass


@dataclass
class EngineArgs:
    model: str = "Qwen/Qwen3-0.6B"
    max_model_len: int | None = None
    tensor_parallel_size: int = 1
    speculative_config: dict | None = None
    spec_tokens: int | None = None

    def create_speculative_config(self, target_model_config, target_parallel_config):
        if self.spec_tokens is not None:
            if self.speculative_config is None:
                self.speculative_config = {}
            if "num_speculative_tokens" in self.speculative_config:
                raise ValueError("--spec-tokens and --speculative-config['num_speculative_tokens'] are mutually exclusive")
            self.speculative_config["num_speculative_tokens"] = self.spec_tokens
        if self.speculative_config is None:
            return None
        self.speculative_config.update(
            {"target_model_config": target_model_config, "target_parallel_config": target_parallel_config})
        return SpeculativeConfig(**self.speculative_config)

    def create_engine_config(self):
        model_config = ModelConfig(model=self.model, max_model_len=self.max_model_len)
        parallel_config = ParallelConfig(tensor_parallel_size=self.tensor_parallel_size)
        speculative_config = self.create_speculative_config(
            target_model_config=model_config, target_parallel_config=parallel_config)
        return speculative_config
'''
FILES = {"vllm/config/speculative.py": SPECULATIVE, "vllm/engine/arg_utils.py": ARG_UTILS}
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 8, "vocab_size": 512,
         "max_position_embeddings": 256}
DRAFTER = {**LLAMA, "architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1}


def written_tree(root: Path):
    import textwrap

    from compat.sources import open_path

    (root / "vllm").mkdir(parents=True, exist_ok=True)
    (root / "vllm" / "__init__.py").write_text("")
    for relpath, text in FILES.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(textwrap.dedent(text))
    return open_path(root)


def spec_validation_fact(root: Path) -> dict:
    """The spec_validation fact of the small tree, as the probe reads it."""
    from compat.probes import all_probes

    tree = written_tree(root)
    probe = next(p for p in all_probes("vllm") if p.key == "spec_validation")
    return probe(tree)
