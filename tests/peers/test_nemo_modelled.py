"""NeMo-Automodel, MODELLED, NOT RUN: nemo_automodel 0.7.0 pins transformers 5.18 and CUDA kernel packages
(quack-kernels, flashoptim, megatron-fsdp) that do not install beside this project's CPU torch. The names and
checks below are read from its released source (the 0.7.0 wheel):

- recipes/llm/train_eagle3.py: the draft config is the target's text config (`to_dict()`), so config.json keeps the
  target's model_type and num_hidden_layers, with `architectures ["LlamaEagle3DraftModel"]`, draft_vocab_size,
  target_hidden_size, tie_word_embeddings false, fc_norm, norm_output, parallel_drafting; no layer ids;
- components/speculative/eagle/draft_llama.py `LlamaEagle3DraftModel`: the backbone is `self.model`, so tensors are
  model.embed_tokens / model.fc / model.layers.0.* / model.norm, with top-level lm_head, and d2t / t2d only when
  draft_vocab_size < vocab_size;
- components/speculative/eagle/target.py: aux states are forward hooks on layer outputs, default
  [1, n//2 - 1, n - 4] (output-of);
- recipes/llm/train_eagle3.py `_load_draft_weights` (warm start): no key in common fails, a missing key fails;
- components/speculative/serve_vllm.py: for vLLM it strips `model.` and writes `LlamaForCausalLMEagle3`.
"""

from __future__ import annotations

import json

from ckpt_builders import DRAFT_VOCAB, HIDDEN, LLAMA_FIELDS, TARGET_LAYERS, VOCAB, canonical_tensors
from peer_files import config, digests, raw_tensors, write_verifier
from peer_venv import compat
from safetensors.numpy import save_file

MODEL_LAYER = ("input_layernorm.weight", "hidden_norm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight",
               "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight", "mlp.gate_proj.weight",
               "mlp.up_proj.weight", "mlp.down_proj.weight")
STATE_DICT = ({"model.embed_tokens.weight", "model.fc.weight", "model.norm.weight", "lm_head.weight", "d2t", "t2d"}
              | {f"model.layers.0.{k}" for k in MODEL_LAYER})


def write_nemo_checkpoint(path, layers: int = TARGET_LAYERS):
    """What train_eagle3.py's consolidated save writes for a Llama target of `layers` layers (reduced draft vocab)."""
    path.mkdir(parents=True)
    tensors = {(k if k in ("lm_head.weight", "d2t", "t2d") else "model." + k): v for k, v in canonical_tensors().items()}
    save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})
    target_config = {**LLAMA_FIELDS, "num_hidden_layers": layers, "model_type": "llama", "torch_dtype": "float16"}
    (path / "config.json").write_text(json.dumps({
        **target_config, "architectures": ["LlamaEagle3DraftModel"], "draft_vocab_size": DRAFT_VOCAB,
        "target_hidden_size": HIDDEN, "tie_word_embeddings": False, "attn_implementation": "eager",
        "fc_norm": False, "norm_output": False, "parallel_drafting": False}))
    return path


def test_a_nemo_checkpoint_is_read_with_its_recipe_defaults(tmp_path):
    nemo = write_nemo_checkpoint(tmp_path / "nemo")
    assert set(raw_tensors(nemo)) == STATE_DICT  # the model the source describes
    done = compat("convert", "ckpt", str(nemo), str(tmp_path / "vllm"), "--to", "vllm")
    assert done.returncode == 0, done.stderr
    assert "[nemo, safetensors]" in done.stdout
    out = config(tmp_path / "vllm")
    n = TARGET_LAYERS  # output-of [1, n//2 - 1, n - 4] = capture-before [2, n//2, n - 3]
    assert out["eagle_aux_hidden_state_layer_ids"] == [2, n // 2, n - 3]
    assert out["num_hidden_layers"] == 1  # the draft's one layer, not the target's count the recipe copied
    # what serve_vllm.py's own export does: strip the model. wrapper, keep the bytes
    assert set(raw_tensors(tmp_path / "vllm")) == {k.removeprefix("model.") for k in STATE_DICT}
    assert digests(tmp_path / "vllm") == digests(nemo)


def test_compats_nemo_output_has_the_models_keys_and_config(tmp_path):
    target = write_verifier(tmp_path / "target")
    nemo = write_nemo_checkpoint(tmp_path / "nemo")
    assert compat("convert", "ckpt", str(nemo), str(tmp_path / "spec"), "--to", "speculators", "--target", str(target)).returncode == 0
    done = compat("convert", "ckpt", str(tmp_path / "spec"), str(tmp_path / "back"), "--to", "nemo")
    assert done.returncode == 0, done.stderr
    back = tmp_path / "back"
    # _load_draft_weights: every key of the model present (nothing missing), none foreign
    assert set(raw_tensors(back)) == STATE_DICT and digests(back) == digests(nemo)
    assert config(back) == config(nemo)  # a trip through the speculators format and back keeps every field


def test_a_full_vocabulary_nemo_checkpoint_has_no_maps(tmp_path):
    tensors = {k: v for k, v in canonical_tensors().items() if k not in ("d2t", "t2d")}
    tensors["lm_head.weight"] = canonical_tensors(seed=3)["embed_tokens.weight"]
    src = tmp_path / "src"
    src.mkdir()
    save_file({k.replace("layers.0.", "midlayer.", 1): v for k, v in tensors.items()}, str(src / "model.safetensors"))
    (src / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama",
                                                 **LLAMA_FIELDS, "draft_vocab_size": VOCAB,
                                                 "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 3, 4]}}))
    assert compat("convert", "ckpt", str(src), str(tmp_path / "nemo"), "--to", "nemo").returncode == 0
    assert "d2t" not in raw_tensors(tmp_path / "nemo")  # has_vocab_compression is false: no buffers to load into


def test_doctor_asks_to_convert_a_nemo_checkpoint_for_vllm(tmp_path, pinned_release):
    """NeMo's own serve_vllm rewrites architectures before vLLM sees it: the architecture alarm is true."""
    pinned_release("vllm", "0.32.0")  # the release doctor --offline reads, in the user cache (the test is `network`)
    target = write_verifier(tmp_path / "target")
    nemo = write_nemo_checkpoint(tmp_path / "nemo")
    done = compat("doctor", str(target), str(nemo), "--engine", "vllm==0.32.0", "--offline", "--json")
    checks = {c["check"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["drafter-architecture"]["verdict"] == "fail" and "LlamaEagle3DraftModel" in checks["drafter-architecture"]["detail"]
