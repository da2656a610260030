"""Helpers for the patch tests: where real releases come from, snapshots, a tiny vLLM-shaped tree."""

from __future__ import annotations

import hashlib
import os
import textwrap
from pathlib import Path

def release_source(engine: str, version: str) -> Path:
    """A directory holding `<engine>/` of the real release, from the user cache (never modified)."""
    from compat.sources.released import fetch_release

    offline = os.environ.get("COMPAT_OFFLINE") == "1"
    return fetch_release(engine, f"=={version}", progress=False, offline=offline).root


def available_releases(engine: str = "vllm") -> list[str]:
    """The releases the matrix runs over: the package index's list from vLLM 0.10.0 on."""
    from packaging.version import Version

    from compat.sources.released import list_releases

    offline = os.environ.get("COMPAT_OFFLINE") == "1"
    return [v for v in list_releases(engine, offline=offline) if Version(v) >= Version("0.10.0")]


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file under root (the record included), by relative path."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*")) if p.is_file()
    }


# -- a tiny vLLM-shaped tree, written here (no vLLM code is copied) -------------------------------------
MINI_FILES = {
    "vllm/__init__.py": "",
    "vllm/config/__init__.py": "",
    "vllm/config/speculative.py": '''
        class SpeculativeConfig:
            def _verify_args(self):
                eagle3_target_supported = ["llama", "qwen"]
                if self.method == "eagle3" and not any(
                    m in self.target_model_config.hf_text_config.model_type for m in eagle3_target_supported
                ):
                    raise ValueError(
                        f"Eagle3 is only supported for {eagle3_target_supported} models. "
                        f"Got {self.target_model_config.hf_text_config.model_type=}"
                    )
                return self
    ''',
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/models/__init__.py": "",
    "vllm/model_executor/models/interfaces.py": '''
        from typing import ClassVar, Literal, Protocol

        class SupportsPP(Protocol):
            supports_pp: ClassVar[Literal[True]] = True

        class SupportsEagle3(Protocol):
            supports_eagle3: ClassVar[Literal[True]] = True
    ''',
    "vllm/model_executor/models/deepseek_v2.py": '''
        from itertools import islice

        from .interfaces import SupportsPP


        def get_pp_group():
            return _PP


        class DeepseekV2Model:
            def __init__(self, layers):
                self.layers = layers
                self.start_layer, self.end_layer = 0, len(layers)

            def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
                if get_pp_group().is_first_rank:
                    hidden_states = inputs_embeds
                    residual = None
                else:
                    hidden_states = intermediate_tensors["hidden_states"]
                    residual = intermediate_tensors["residual"]

                for layer in islice(self.layers, self.start_layer, self.end_layer):
                    hidden_states, residual = layer(positions, hidden_states, residual)

                if not get_pp_group().is_last_rank:
                    return {"hidden_states": hidden_states, "residual": residual}

                hidden_states, _ = self.norm(hidden_states, residual)
                return hidden_states

            def norm(self, hidden_states, residual):
                return hidden_states + residual, None


        class DeepseekV2ForCausalLM(SupportsPP):
            def __init__(self, model):
                self.model = model

            def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
                return self.model.forward(input_ids, positions, intermediate_tensors, inputs_embeds)


        class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):
            pass
    ''',
}


def write_mini_vllm(root: Path, version: str = "0.11.0") -> Path:
    for rel, text in MINI_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    (root / "vllm/_version.py").write_text(f"__version__ = version = {version!r}\n")
    return root
