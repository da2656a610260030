"""Helpers for the patch tests: where real releases come from, snapshots, a tiny vLLM-shaped tree."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

def release_source(engine: str, version: str) -> Path:
    """A directory holding `<engine>/` of the real release, from the user cache (never modified)."""
    import pinned

    return pinned.fetch(engine, version).root


def available_releases(engine: str = "vllm") -> list[str]:
    """The releases the matrix runs over: the pinned ones (tests/releases.json) from vLLM 0.10.0 on."""
    import pinned

    return pinned.versions(engine, "0.10.0")


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


KIMI_FILES = {
    "vllm/model_executor/models/kimi_k25.py": '''
        from .interfaces import SupportsPP


        class KimiK25ForConditionalGeneration(SupportsPP):
            def __init__(self, language_model):
                self.language_model = language_model

            def load_weights(self, weights):
                return weights
    ''',
    "vllm/v1/__init__.py": "",
    "vllm/v1/spec_decode/__init__.py": "",
    "vllm/v1/spec_decode/eagle.py": '''
        def load_model(self, target_model):
            if self.get_model_name(target_model) == "Qwen2_5_VLForConditionalGeneration":
                self.model.config.image_token_index = target_model.config.image_token_id
            else:
                self.model.config.image_token_index = target_model.config.image_token_index
    ''',
}


def write_mini_kimi_vllm(root: Path, version: str = "0.16.0") -> Path:
    """The small tree plus a Kimi-K2.5 wrapper and an EAGLE proposer: three patches, four files change."""
    write_mini_vllm(root, version)
    for rel, text in KIMI_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


def compile_bytecode(root: Path, relpaths) -> None:
    """Cached bytecode of each module in the three invalidation modes (one per optimization level):
    unchecked-hash (never compared with the source), checked-hash, timestamp."""
    import py_compile
    import sys

    modes = [py_compile.PycInvalidationMode.UNCHECKED_HASH, py_compile.PycInvalidationMode.CHECKED_HASH,
             py_compile.PycInvalidationMode.TIMESTAMP]
    for rel in relpaths:
        source = root / rel
        for level, mode in enumerate(modes):
            suffix = f".opt-{level}" if level else ""
            cfile = source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}{suffix}.pyc"
            py_compile.compile(str(source), cfile=str(cfile), optimize=level, invalidation_mode=mode, doraise=True)


def stale_bytecode(root: Path) -> list[str]:
    """Cached bytecode that does not belong to its module's current source (in any invalidation mode).

    An unchecked-hash one would be imported instead of the source; the others would be recompiled,
    but compat removes them all before a module changes, so none may be left either.
    """
    import importlib.util

    stale = []
    for pyc in sorted(root.rglob("__pycache__/*.pyc")):
        source = pyc.parent.parent / (pyc.name.split(".")[0] + ".py")
        data = pyc.read_bytes()
        if not source.exists():
            stale.append(str(pyc.relative_to(root)))
            continue
        flags = int.from_bytes(data[4:8], "little")
        if flags & 1:  # hash-based
            fresh = data[8:16] == importlib.util.source_hash(source.read_bytes())
        else:
            st = source.stat()
            fresh = (int.from_bytes(data[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
                     and int.from_bytes(data[12:16], "little") == st.st_size & 0xFFFFFFFF)
        if not fresh:
            stale.append(str(pyc.relative_to(root)))
    return stale
