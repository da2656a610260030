"""The target model, read once for every command: what a drafter must match and what an engine sees.

Precedence, decided here and nowhere else: the language model's fields (model_type, layers, vocab,
hidden size, context) come from `text_config` when the config has one and it sets the field, else
from the top level. Kimi-K2.5 is the case in point: top-level `model_type: kimi_k25` and
`KimiK25ForConditionalGeneration` (the class the engine instantiates) wrap a `text_config` of
`kimi_k2` with 61 layers, hidden 7168, vocab 163840 (what vLLM's whitelist tests is
`hf_text_config.model_type`, and what the drafter's hidden states come from).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from compat.core.errors import RefusedError, UsageError
from compat.core.files import input_roots, read_json

# `deepseek` for targets SGLang captures through DeepseekV2ForCausalLM.set_eagle3_layers_to_capture
# (DeepSeek V2/V3, Kimi-K2/K2.5, GLM-4 MoE Lite), `llama` for every other aux-capturing target.
DEEPSEEK_FAMILY_KEYS = ("deepseek", "kimi", "glm4_moe_lite", "glm4moelite")


def target_family(model_type: str | None, architectures: list[str] | None) -> str:
    """"deepseek" or "llama" from a model_type and architecture names (the SGLang offset rule's split)."""
    text = " ".join([model_type or "", *(architectures or [])]).lower()
    return "deepseek" if any(key in text for key in DEEPSEEK_FAMILY_KEYS) else "llama"


@dataclass
class Target:
    path: Path  # the model directory: what the engine is given
    config_path: Path
    config: dict
    model_type: str | None  # the text model's: what vLLM's whitelist tests (hf_text_config.model_type)
    top_model_type: str | None
    architectures: list[str]  # top-level first, then text_config's
    architecture: str | None  # the top-level architectures[0]: the class the engine instantiates
    num_hidden_layers: int | None
    vocab_size: int | None
    hidden_size: int | None
    max_position_embeddings: int | None

    @property
    def family(self) -> str:
        return target_family(self.model_type, self.architectures)

    @property
    def names(self) -> list[str]:
        """The names a release may know this target by: text model_type, top-level model_type, class."""
        return [n for n in (self.model_type, self.top_model_type, self.architecture) if n]

    @property
    def needs_remote_code(self) -> bool:
        return bool(self.config.get("auto_map"))

    @property
    def quantized(self) -> bool:
        """The checkpoint declares a quantization (what an engine builds its quantized layers from)."""
        return any(isinstance(h.get(k), dict) for h in (self.config, self.text_config)
                   for k in ("quantization_config", "compression_config"))

    @property
    def text_config(self) -> dict:
        """The nested language-model config ({} when the config is flat)."""
        text = self.config.get("text_config")
        return text if isinstance(text, dict) else {}


@dataclass(frozen=True)
class WeightNames:
    """The tensor names a checkpoint directory holds, from its safetensors index or its one file's header (never
    the weights), and where they were read."""

    names: frozenset[str]
    source: str  # the file read


def weight_names(directory: Path) -> WeightNames | None:
    """The names of `model.safetensors.index.json`'s weight_map, else of `model.safetensors`'s header; None when the
    directory has neither (or they cannot be read: the caller says it cannot tell)."""
    from compat.core.errors import CompatError
    from compat.safetensors_stream.header import read_header

    index = directory / "model.safetensors.index.json"
    single = directory / "model.safetensors"
    try:
        if index.is_file():
            data = read_json(index, input_roots(directory), "a safetensors index")
            weights = data.get("weight_map") if isinstance(data, dict) else None
            return WeightNames(frozenset(weights), str(index)) if isinstance(weights, dict) else None
        if single.is_file():
            return WeightNames(frozenset(read_header(single).tensors), str(single))
    except (CompatError, OSError):
        return None
    return None


def read_target(path: str | Path) -> Target:
    """The target at `path` (a model directory or its config.json)."""
    path = Path(path).expanduser()
    config_path = path / "config.json" if path.is_dir() else path
    if not config_path.exists() and not config_path.is_symlink():
        raise UsageError(f"target {path}: no config.json there", hint="pass the target model directory or its config.json")
    try:
        config = read_json(config_path, input_roots(config_path.parent), "a model config.json")
    except FileNotFoundError:
        raise UsageError(f"target {path}: no config.json there", hint="pass the target model directory or its config.json") from None
    if not isinstance(config, dict):
        raise RefusedError(f"target {config_path}: not a JSON object", hint="pass the target model's config.json")
    text_config = config.get("text_config")
    text = text_config if isinstance(text_config, dict) else {}

    def pick(key: str) -> int | None:
        value = text.get(key) if text.get(key) is not None else config.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    def names(value) -> list[str]:
        return [a for a in value if isinstance(a, str)] if isinstance(value, list) else []

    top_architectures = names(config.get("architectures"))
    architectures = list(dict.fromkeys(top_architectures + names(text.get("architectures"))))
    model_type = text.get("model_type") or config.get("model_type")
    top_model_type = config.get("model_type")
    return Target(
        path=config_path.parent, config_path=config_path, config=config,
        model_type=model_type if isinstance(model_type, str) else None,
        top_model_type=top_model_type if isinstance(top_model_type, str) else None,
        architectures=architectures, architecture=top_architectures[0] if top_architectures else None,
        num_hidden_layers=pick("num_hidden_layers"), vocab_size=pick("vocab_size"), hidden_size=pick("hidden_size"),
        max_position_embeddings=pick("max_position_embeddings"),
    )
