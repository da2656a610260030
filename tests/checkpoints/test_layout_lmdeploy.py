"""--to lmdeploy: the layout LMDeploy's EAGLE-3 draft classes load, from the EAGLE, vLLM and MLA layouts and back.

What LMDeploy loads is read from its source (checkpoints/lmdeploy.py cites each line, 0.18.0): `midlayer.*` names
with no `model.` prefix, `LlamaForCausalLM` (its config builder renames it to Eagle3LlamaForCausalLM; it takes no
LlamaForCausalLMEagle3), one layer; the Kimi MLA drafter from 0.17.0. It never reads the drafter's ids for the target:
the target always captures (2, n//2, n-3), so a drafter trained on other layers is refused. The converted drafter is
read back by the release's own loader facts in tests/doctor/test_lmdeploy_doctor.py; LMDeploy needs CUDA, nothing runs.
"""

from __future__ import annotations

import json

from compat.cli import main as compat_main
from ckpt_builders import DRAFT_VOCAB, TRAINED_ON, eagle_config, mla_config
from test_convert_roundtrip import canonical_bytes, tensor_bytes

DEFAULT_8 = [2, 4, 5]  # (2, n//2, n-3) of the 8-layer synthetic target: what LMDeploy feeds


def run(*args) -> int:
    return compat_main(["convert", "ckpt", *(str(a) for a in args)])


def trained_on_the_default(config: dict) -> dict:
    config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [i - 1 for i in DEFAULT_8]  # output-of, as SpecForge
    config.pop("eagle_aux_hidden_state_layer_ids", None)
    return config


def test_eagle_to_lmdeploy_and_back(tmp_path, drafter, llama_target):
    src = drafter("eagle", config=trained_on_the_default(eagle_config()))
    out, back = tmp_path / "lmdeploy", tmp_path / "back"
    assert run(src, out, "--to", "lmdeploy", "--target", llama_target, "--engine-version", "0.18.0") == 0
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["model_type"] == "llama"
    assert config["num_hidden_layers"] == 1 and config["draft_vocab_size"] == DRAFT_VOCAB
    assert config["eagle_aux_hidden_state_layer_ids"] == DEFAULT_8 and "norm_before_residual" not in config
    names = set(tensor_bytes(out))
    assert "midlayer.mlp.up_proj.weight" in names and {"d2t", "t2d", "fc.weight"} <= names
    assert not any(n.startswith(("layers.", "model.")) for n in names)
    assert canonical_bytes(out) == canonical_bytes(src)  # renamed only, byte-identical
    assert run(out, back, "--to", "eagle", "--target", llama_target) == 0
    assert tensor_bytes(back) == tensor_bytes(src)


def test_vllm_layout_to_lmdeploy_renames_layers_0(tmp_path, drafter, llama_target):
    config = {**json.loads((drafter("vllm") / "config.json").read_text()), "eagle_aux_hidden_state_layer_ids": DEFAULT_8}
    src = drafter("vllm", config=config)
    out = tmp_path / "lmdeploy"
    assert run(src, out, "--to", "lmdeploy", "--target", llama_target, "--layer-ids-convention", "capture-before") == 0
    assert "midlayer.self_attn.q_proj.weight" in set(tensor_bytes(out))
    assert json.loads((out / "config.json").read_text())["architectures"] == ["LlamaForCausalLM"]


def test_a_drafter_trained_on_other_layers_is_refused(tmp_path, drafter, llama_target, capsys):
    src = drafter("eagle")  # trained on TRAINED_ON, not the target's (2, n//2, n-3)
    assert run(src, tmp_path / "out", "--to", "lmdeploy", "--target", llama_target) == 4
    err = capsys.readouterr().err
    assert f"LMDeploy feeds every EAGLE-3 drafter layers {DEFAULT_8}" in err and f"trained on {TRAINED_ON}" in err
    assert not (tmp_path / "out").exists()


def test_releases_before_eagle3_and_mla_before_0_17_are_refused(tmp_path, drafter, llama_target, deepseek_target, capsys):
    src = drafter("eagle", config=trained_on_the_default(eagle_config()))
    assert run(src, tmp_path / "a", "--to", "lmdeploy", "--target", llama_target, "--engine-version", "0.10.0") == 4
    assert "LMDeploy 0.10.0 does not support EAGLE-3" in capsys.readouterr().err
    mla = mla_config()
    mla["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [i - 1 for i in DEFAULT_8]
    mla["eagle_aux_hidden_state_layer_ids"] = DEFAULT_8
    src = drafter("mla", config=mla)
    assert run(src, tmp_path / "b", "--to", "lmdeploy", "--target", deepseek_target, "--engine-version", "0.16.0") == 4
    assert "from 0.17.0" in capsys.readouterr().err
    assert run(src, tmp_path / "c", "--to", "lmdeploy", "--target", deepseek_target, "--engine-version", "0.17.0") == 0
    config = json.loads((tmp_path / "c" / "config.json").read_text())
    assert config["architectures"] == ["Eagle3DeepseekV2ForCausalLM"] and config["model_type"] == "kimi_k2"
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == DEFAULT_8  # counted by its fc
