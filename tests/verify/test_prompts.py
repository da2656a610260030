"""Prompts: text with a tokenizer, else token ids drawn from the drafter's d2t (compat's own safetensors reader)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from compat.core.errors import RefusedError, UsageError
from compat.verify.inputs import (
    DEFAULT_TEXTS, draft_vocabulary, draw_prompt_ids, plan_prompts, read_d2t, read_model_dir,
)


def model_dir(path, config: dict, tensors: dict | None = None, tokenizer: bool = False):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config))
    if tensors is not None:
        save_file(tensors, str(path / "model.safetensors"))
    if tokenizer:
        (path / "tokenizer.json").write_text("{}")
    return read_model_dir(path, path.name)


TARGET = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 100, "num_hidden_layers": 4,
          "bos_token_id": 0, "eos_token_id": [1, 2]}


def d2t_for(draft_ids: list[int], dtype=np.int64) -> np.ndarray:
    return (np.array(draft_ids) - np.arange(len(draft_ids))).astype(dtype)


def test_d2t_offsets_give_the_draft_vocabulary(tmp_path):
    ids = [3, 7, 8, 20, 99]
    drafter = model_dir(tmp_path / "drafter", {}, {"d2t": d2t_for(ids), "fc.weight": np.zeros((2, 2), np.float32)})
    assert draft_vocabulary(read_d2t(drafter.path), 100) == ids


def test_d2t_is_found_in_the_shard_the_index_names(tmp_path):
    drafter = tmp_path / "drafter"
    drafter.mkdir()
    save_file({"fc.weight": np.zeros((2, 2), np.float32)}, str(drafter / "model-00001-of-00002.safetensors"))
    save_file({"model.d2t": d2t_for([5, 6], np.int32)}, str(drafter / "model-00002-of-00002.safetensors"))
    (drafter / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        "fc.weight": "model-00001-of-00002.safetensors", "model.d2t": "model-00002-of-00002.safetensors"}}))
    assert read_d2t(drafter) == [5, 5]


def test_no_d2t_is_none_and_a_float_d2t_is_refused(tmp_path):
    plain = model_dir(tmp_path / "plain", {}, {"fc.weight": np.zeros((2, 2), np.float32)})
    assert read_d2t(plain.path) is None
    odd = model_dir(tmp_path / "odd", {}, {"d2t": np.zeros(4, np.float32)})
    with pytest.raises(RefusedError, match="d2t is a 1-d integer tensor"):
        read_d2t(odd.path)


def test_d2t_outside_the_target_vocab_is_refused():
    with pytest.raises(RefusedError, match="outside the target vocabulary"):
        draft_vocabulary([0, 200], 100)


def test_drawn_prompts_are_deterministic_and_from_the_pool():
    pool = [4, 9, 11]
    first = draw_prompt_ids(pool, count=3, length=5, seed=1)
    assert first == draw_prompt_ids(pool, count=3, length=5, seed=1)
    assert len(first) == 3 and all(len(p) == 5 and set(p) <= set(pool) for p in first)
    assert first != draw_prompt_ids(pool, count=3, length=5, seed=2)


def test_plan_uses_the_draft_vocabulary_minus_special_ids(tmp_path):
    target = model_dir(tmp_path / "target", TARGET)
    drafter = model_dir(tmp_path / "drafter", {}, {"d2t": d2t_for([1, 2, 30, 31, 32])})
    plan = plan_prompts(target, drafter, count=4)
    assert plan.kind == "token-ids" and "draft vocabulary (5 ids" in plan.source
    assert len(plan.prompts) == 4 and {t for p in plan.prompts for t in p} <= {30, 31, 32}


def test_plan_without_d2t_draws_from_the_target_vocabulary(tmp_path):
    target = model_dir(tmp_path / "target", TARGET)
    drafter = model_dir(tmp_path / "drafter", {}, {"fc.weight": np.zeros((2, 2), np.float32)})
    plan = plan_prompts(target, drafter, count=2)
    assert "target vocabulary (100 ids" in plan.source
    assert all(0 <= t < 100 and t not in (0, 1, 2) for p in plan.prompts for t in p)


def test_plan_with_a_tokenizer_uses_texts_unless_ids_are_asked_for(tmp_path):
    target = model_dir(tmp_path / "target", TARGET, tokenizer=True)
    drafter = model_dir(tmp_path / "drafter", {}, {"d2t": d2t_for([10, 11])})
    assert plan_prompts(target, drafter, count=3).prompts == list(DEFAULT_TEXTS[:3])
    assert plan_prompts(target, drafter, texts=["Hi"]).prompts == ["Hi"]
    assert plan_prompts(target, drafter, prompt_ids=True, count=2).kind == "token-ids"


def test_text_prompts_need_a_tokenizer(tmp_path):
    target = model_dir(tmp_path / "target", TARGET)
    drafter = model_dir(tmp_path / "drafter", {}, {})
    with pytest.raises(UsageError, match="has no tokenizer files"):
        plan_prompts(target, drafter, texts=["Hi"])


def test_model_dir_errors_name_the_file(tmp_path):
    with pytest.raises(UsageError, match="no such directory"):
        read_model_dir(tmp_path / "nope", "target")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RefusedError, match="config.json: missing"):
        read_model_dir(tmp_path / "empty", "target")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{not json")
    with pytest.raises(RefusedError, match="not readable JSON"):
        read_model_dir(tmp_path / "bad", "drafter")


def test_model_dir_reads_what_verify_needs(tmp_path):
    target = model_dir(tmp_path / "target", {**TARGET, "max_position_embeddings": 512}, tokenizer=True)
    assert (target.architecture, target.num_layers, target.vocab_size, target.max_positions) == ("LlamaForCausalLM", 4, 100, 512)
    assert target.has_tokenizer and target.special_ids == {0, 1, 2}
    assert read_model_dir(tmp_path / "target" / "config.json", "target").path == target.path
