"""compat convert ckpt on block drafters (compat/convert/blocks.py): the files copied byte for byte, config.json
rewritten so the release feeds the layers the drafter was trained on and reads its block as trained, the record,
and the refusals. Releases' facts: tests/checks/method_facts (captured from the real releases)."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from compat.block_drafters import fed
from compat.checkpoints import RECORD_FILE
from compat.convert.blocks import execute_blocks, plan_blocks
from compat.core.errors import RefusedError
from compat.target import read_target

FACTS = Path(__file__).resolve().parents[1] / "checks" / "method_facts"
SPECFORGE_DFLASH = {"architectures": ["DFlashDraftModel"], "auto_map": {"AutoModel": "dflash.DFlashDraftModel"}, "block_size": 16,
                    "dflash_config": {"mask_token_id": 1000, "target_layer_ids": [1, 9, 17, 25, 33]}, "model_type": "qwen3",
                    "num_hidden_layers": 5, "num_target_layers": 36, "hidden_size": 64, "vocab_size": 1024}
SPECFORGE_DSPARK = {**SPECFORGE_DFLASH, "architectures": ["DSparkDraftModel"], "block_size": 7,
                    "dflash_config": {"projector_type": "dspark", "markov_rank": 16, "mask_token_id": 1000,
                                      "enable_confidence_head": True, "target_layer_ids": [1, 9, 17, 25, 33]}}


def _release(engine, version):
    return json.loads((FACTS / f"{engine}-{version}.json").read_text())


def _drafter(root: Path, config: dict) -> Path:
    root.mkdir()
    (root / "config.json").write_text(json.dumps(config))
    save_file({"fc.weight": np.arange(64 * 320, dtype=np.float32).reshape(64, 320), "norm.weight": np.ones(64, np.float32)},
              str(root / "model.safetensors"))
    (root / "tokenizer_config.json").write_text("{}")
    return root


@pytest.fixture
def target(tmp_path):
    (tmp_path / "qwen3").mkdir()
    (tmp_path / "qwen3" / "config.json").write_text(json.dumps(
        {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 36, "hidden_size": 64, "vocab_size": 1024}))
    return read_target(tmp_path / "qwen3")


def test_dflash_for_vllm_0_20_writes_the_key_every_runner_reads_first(tmp_path, target):
    src = _drafter(tmp_path / "dflash", SPECFORGE_DFLASH)
    report = _release("vllm", "0.20.0")
    plan = plan_blocks(src, tmp_path / "out", report, target)
    assert plan.layout == "specforge-dflash" and plan.rewrite.written == {"eagle_aux_hidden_state_layer_ids": [2, 10, 18, 26, 34]}
    result = execute_blocks(plan)
    out = tmp_path / "out"
    assert result["verified"] == 2 and sorted(p.name for p in out.iterdir()) == [
        RECORD_FILE, "config.json", "model.safetensors", "tokenizer_config.json"]
    assert hashlib.sha256((out / "model.safetensors").read_bytes()).digest() == hashlib.sha256(
        (src / "model.safetensors").read_bytes()).digest()
    config = json.loads((out / "config.json").read_text())
    assert config["dflash_config"] == SPECFORGE_DFLASH["dflash_config"]  # the trainer's own key kept
    assert {f.ids == [2, 10, 18, 26, 34] for f in fed(report, config, target, "dflash")} == {True}
    record = json.loads((out / RECORD_FILE).read_text())
    assert record["layer_ids"]["capture_before"] == [2, 10, 18, 26, 34] and record["family"] == "dflash"
    assert json.loads((src / "config.json").read_text()) == SPECFORGE_DFLASH  # SRC untouched


def test_nothing_to_change_on_a_release_that_reads_it_right(tmp_path, target):
    plan = plan_blocks(_drafter(tmp_path / "dflash", SPECFORGE_DFLASH), tmp_path / "out", _release("vllm", "0.24.0"), target)
    assert plan.rewrite.written == {} and plan.rewrite.why == []


def test_dspark_block_layout_for_vllm_0_34_and_0_25(tmp_path, target):
    src = _drafter(tmp_path / "dspark", SPECFORGE_DSPARK)
    assert plan_blocks(src, tmp_path / "a", _release("vllm", "0.34.0"), target).rewrite.written == {"sample_from_anchor": False}
    assert plan_blocks(src, tmp_path / "b", _release("vllm", "0.25.0"), target).rewrite.written == {"dspark_bonus_anchor": True}


def test_a_release_that_reads_no_layout_key_is_refused(tmp_path, target):
    src = _drafter(tmp_path / "dspark", SPECFORGE_DSPARK)
    with pytest.raises(RefusedError, match="reads no block layout key"):
        plan_blocks(src, tmp_path / "out", _release("sglang", "0.5.18"), target)


def test_sglang_ids_are_written_for_the_targets_offset(tmp_path, target):
    """SGLang 0.5.23's Qwen3 hook adds 1 to the DFlash ids (models/qwen3.py:803-805): SpecForge's output-of ids are
    read as trained. A hook that adds nothing (0.5.23's Qwen3MoeModel) gets the ids written one higher."""
    src = _drafter(tmp_path / "dflash", SPECFORGE_DFLASH)
    report = _release("sglang", "0.5.23")
    assert plan_blocks(src, tmp_path / "a", report, target).rewrite.written == {}
    for entry in report["block_targets"]["DFLASH"]:
        if entry["class"] == "Qwen3ForCausalLM":
            entry["layer_id_offset"] = 0
    plan = plan_blocks(src, tmp_path / "b", report, target)
    assert plan.rewrite.written == {"dflash_config.target_layer_ids": [2, 10, 18, 26, 34]}


def test_links_out_of_src_are_refused(tmp_path, target):
    src = _drafter(tmp_path / "dflash", SPECFORGE_DFLASH)
    (tmp_path / "secret").write_text("x")
    (src / "extra.bin").symlink_to(tmp_path / "secret")
    with pytest.raises(RefusedError, match="symbolic link"):
        plan_blocks(src, tmp_path / "out", _release("vllm", "0.20.0"), target)


def test_an_eagle3_drafter_is_not_taken(tmp_path, target):
    src = _drafter(tmp_path / "e3", {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 64})
    with pytest.raises(RefusedError, match="not a DFlash or DSpark drafter"):
        plan_blocks(src, tmp_path / "out", _release("vllm", "0.20.0"), target)
