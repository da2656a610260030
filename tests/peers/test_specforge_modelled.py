"""SpecForge, MODELLED, NOT RUN: specforge 0.2.0 pins sglang 0.5.14 and torch 2.11, which cannot be installed
beside this project's torch. The names and checks below are read from its released source (the 0.2.0 wheel):

- specforge/export/to_sglang.py: `_REQUIRED_SERVING_KEYS` = fc.weight, norm.weight, lm_head.weight, t2d, d2t,
  and no key may keep the trainer's `draft_model.` prefix (`_serving_state`);
- specforge/export/checkpoint_io.py `materialize_draft`: a key the model lacks fails, a missing non-embedding
  key fails;
- specforge/modeling/auto.py `AutoDraftModelConfig.from_file`: exactly one architecture, registered in
  DRAFT_REGISTRY (LlamaForCausalLMEagle3 for EAGLE-3); draft_vocab_size defaults to vocab_size;
- specforge/modeling/draft/llama3_eagle.py `LlamaForCausalLMEagle3`: embed_tokens, one `midlayer` (q/k/v/o_proj
  without bias over 2 x hidden, gate/up/down_proj, hidden_norm, input_layernorm, post_attention_layernorm),
  fc = Linear(3 x target_hidden_size, hidden), norm, lm_head [draft_vocab, hidden], buffers t2d (bool, vocab) and
  d2t (int64, draft_vocab).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from ckpt_builders import DRAFT_VOCAB, HIDDEN, VOCAB, canonical_tensors, write_drafter
from peer_files import config, digests, raw_tensors, write_verifier
from peer_venv import compat

REQUIRED_SERVING_KEYS = ("fc.weight", "norm.weight", "lm_head.weight", "t2d", "d2t")
MIDLAYER = ("input_layernorm.weight", "hidden_norm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight",
            "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight", "mlp.gate_proj.weight",
            "mlp.up_proj.weight", "mlp.down_proj.weight")
MODEL_KEYS = {"embed_tokens.weight", "fc.weight", "norm.weight", "lm_head.weight", "t2d", "d2t"} | {f"midlayer.{k}" for k in MIDLAYER}
DRAFT_REGISTRY = ("LlamaForCausalLMEagle3",)  # the EAGLE-3 entry of specforge/modeling/draft/registry.py


def specforge_would_load(directory) -> list[str]:
    """The refusals SpecForge's exporter and loaders would raise for this directory, per the source above."""
    problems = []
    tensors = raw_tensors(directory)
    cfg = config(directory)
    archs = cfg.get("architectures") or []
    if len(archs) != 1 or archs[0] not in DRAFT_REGISTRY:
        problems.append(f"architectures {archs}")
    problems += [f"missing required serving key {k}" for k in REQUIRED_SERVING_KEYS if k not in tensors]
    problems += [f"trainer prefix {k}" for k in tensors if k.startswith("draft_model.")]
    problems += [f"unexpected {k}" for k in tensors if k not in MODEL_KEYS]
    problems += [f"missing {k}" for k in MODEL_KEYS - set(tensors) if "embed" not in k]
    draft_vocab = cfg.get("draft_vocab_size") or cfg.get("vocab_size")
    shapes = {"t2d": ("BOOL", [cfg["vocab_size"]]), "d2t": ("I64", [draft_vocab]),
              "lm_head.weight": (None, [draft_vocab, cfg["hidden_size"]]),
              "fc.weight": (None, [cfg["hidden_size"], 3 * (cfg.get("target_hidden_size") or cfg["hidden_size"])])}
    for name, (dtype, shape) in shapes.items():
        if name in tensors and (tensors[name][1] != shape or dtype and tensors[name][0] != dtype):
            problems.append(f"{name} {tensors[name][:2]} != {dtype} {shape}")
    return problems


def test_compats_specforge_output_passes_specforges_checks(tmp_path):
    target = write_verifier(tmp_path / "target")
    for layout in ("speculators", "vllm", "eagle"):
        src = write_drafter(tmp_path / f"src-{layout}", layout)
        dst = tmp_path / f"sf-{layout}"
        said = ["--layer-ids-convention", "capture-before"] if layout == "vllm" else []  # top-level ids alone do not say
        done = compat("convert", "ckpt", str(src), str(dst), "--to", "specforge", "--target", str(target), *said)
        assert done.returncode == 0, done.stderr
        assert specforge_would_load(dst) == [], layout
        assert digests(dst) == digests(src)  # every tensor, its bytes unchanged


def test_a_full_vocabulary_drafter_gets_the_identity_maps_specforge_requires(tmp_path):
    tensors = canonical_tensors(embed=False)
    del tensors["d2t"], tensors["t2d"]
    tensors["lm_head.weight"] = canonical_tensors()["embed_tokens.weight"]  # [VOCAB, HIDDEN]: a full-vocab head
    src = write_drafter(tmp_path / "src", "vllm", tensors=tensors)
    cfg = config(src)
    cfg["draft_vocab_size"] = VOCAB
    (src / "config.json").write_text(json.dumps(cfg))
    done = compat("convert", "ckpt", str(src), str(tmp_path / "sf"), "--to", "specforge", "--layer-ids-convention", "capture-before")
    assert done.returncode == 0, done.stderr
    assert specforge_would_load(tmp_path / "sf") == []
    written = raw_tensors(tmp_path / "sf")
    assert written["d2t"][2] == bytes(8 * VOCAB) and written["t2d"][2] == b"\x01" * VOCAB  # SpecForge's own initial maps
    # the vllm layout, from the same source, writes no maps (vLLM >= 0.30 refuses d2t for a full vocabulary)
    assert compat("convert", "ckpt", str(src), str(tmp_path / "v"), "--to", "vllm", "--layer-ids-convention",
                  "capture-before").returncode == 0
    assert "d2t" not in raw_tensors(tmp_path / "v") and "t2d" not in raw_tensors(tmp_path / "v")
    assert (DRAFT_VOCAB, HIDDEN) == (128, 64)


@pytest.mark.parametrize("refused", ["four aux states", "norm_before_fc"])
def test_what_specforges_model_cannot_hold_is_refused(tmp_path, refused):
    tensors = canonical_tensors()
    if refused == "four aux states":
        tensors["fc.weight"] = np.zeros((HIDDEN, 4 * HIDDEN), np.float16)  # fc over 4 aux states
    src = write_drafter(tmp_path / "src", "vllm", tensors=tensors)
    cfg = config(src)
    if refused == "four aux states":
        cfg["eagle_aux_hidden_state_layer_ids"] = [1, 3, 5, 6]
    else:
        cfg["norm_before_fc"] = True
    (src / "config.json").write_text(json.dumps(cfg))
    done = compat("convert", "ckpt", str(src), str(tmp_path / "sf"), "--to", "specforge", "--layer-ids-convention", "capture-before")
    assert done.returncode == 4 and "SpecForge" in done.stderr and not (tmp_path / "sf").exists()


def test_a_specforge_directory_converts_back_byte_for_byte(tmp_path):
    src = write_drafter(tmp_path / "src", "speculators")
    assert compat("convert", "ckpt", str(src), str(tmp_path / "sf"), "--to", "specforge").returncode == 0
    done = compat("convert", "ckpt", str(tmp_path / "sf"), str(tmp_path / "back"), "--to", "speculators")
    assert done.returncode == 0, done.stderr
    assert digests(tmp_path / "back") == digests(src) and config(tmp_path / "back") == config(src)
