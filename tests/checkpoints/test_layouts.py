"""The layout registry and the engine-release rules each layout encodes."""

from __future__ import annotations

import json

import pytest
from packaging.version import Version

from compat import checkpoints
from compat.checkpoints import sglang
from compat.cli import main as compat_main
from ckpt_builders import TRAINED_ON, mla_config, write_drafter, write_target


def run(*args) -> int:
    return compat_main(["convert", "ckpt", *(str(a) for a in args)])


def test_registry_finds_every_layout_file():
    layouts = checkpoints.all_layouts()
    assert set(layouts) == {"eagle", "lmdeploy", "mla", "modelopt", "nemo", "sglang", "specforge", "speculators", "vllm"}
    for name, module in layouts.items():
        assert module.NAME == name and module.DESCRIPTION and callable(module.detect)


@pytest.mark.parametrize("config, names, expected", [
    ({"architectures": ["LlamaForCausalLMEagle3"]}, {"midlayer.mlp.up_proj.weight", "fc.weight"}, "eagle"),
    ({"architectures": ["LlamaForCausalLM"]}, {"midlayer.mlp.up_proj.weight"}, "eagle"),  # SafeAILab
    ({"architectures": ["Eagle3LlamaForCausalLM"]}, {"layers.0.mlp.up_proj.weight"}, "vllm"),
    ({"speculators_model_type": "eagle3"}, {"layers.0.mlp.up_proj.weight"}, "speculators"),
    ({"architectures": ["Eagle3DeepseekV2ForCausalLM"]}, {"layers.0.self_attn.q_a_proj.weight"}, "mla"),
    ({"_compat_record": {"layout": "sglang"}}, {"midlayer.mlp.up_proj.weight"}, "sglang"),
])
def test_detect(config, names, expected):
    assert checkpoints.detect_layout(config, names)[0].NAME == expected


KIMI = 61


@pytest.mark.parametrize("declared, version, family, captured", [
    # sglang-eagle3.md 2.2 worked examples for a 61-layer Kimi target
    ([1, 29, 57], "0.5.12", "deepseek", [2, 30, 58]),
    ([1, 29, 57], "0.5.13", "deepseek", [2, 30, 58]),
    ([2, 30, 58], "0.5.12", "deepseek", [3, 31, 59]),
    ([2, 30, 58], "0.5.16", "deepseek", [2, 30, 58]),
    ([3, 31, 57], "0.5.13", "deepseek", [3, 31, 57]),
    ([2, 30, 58], "0.5.23", "llama", [3, 31, 59]),  # Llama-family targets always add +1
    ([2, 30, 58], None, None, None),  # unknown release and family: the rules disagree
])
def test_sglang_offset_rule(declared, version, family, captured):
    assert sglang.engine_capture(declared, Version(version) if version else None, family) == captured


@pytest.mark.parametrize("capture_before, version, family, declared", [
    ([2, 30, 58], None, None, [1, 29, 57]),  # the default set has one spelling for every release
    ([3, 31, 59], "0.5.12", "deepseek", [2, 30, 58]),
    ([3, 31, 59], "0.5.16", "deepseek", [3, 31, 59]),
    ([3, 31, 59], None, "deepseek", None),
    ([3, 31, 59], None, "llama", [2, 30, 58]),
    ([1, 29, 57], "0.5.16", "deepseek", None),  # no declared list captures layer 1 there
    ([1, 29, 57], "0.5.16", "llama", [0, 28, 56]),
])
def test_sglang_declares_what_the_release_maps_back(capture_before, version, family, declared):
    got = sglang.declare_for(capture_before, Version(version) if version else None, family)
    assert got == declared
    if got is not None:
        assert sglang.engine_capture(got, Version(version) if version else None, family) == capture_before


@pytest.mark.network
def test_sglang_mla_needs_release_or_refuses(tmp_path, capsys):
    src = write_drafter(tmp_path / "src", "mla")
    target = write_target(tmp_path / "tgt", family="deepseek")
    assert run(src, tmp_path / "a", "--to", "sglang", "--target", target) == 4
    assert "--engine-version" in capsys.readouterr().err
    assert run(src, tmp_path / "b", "--to", "sglang", "--target", target, "--engine-version", "0.5.8") == 4
    assert "from 0.5.12" in capsys.readouterr().err  # no MLA drafter before 0.5.12
    assert run(src, tmp_path / "c", "--to", "sglang", "--target", target, "--engine-version", "0.5.12") == 0
    config = json.loads((tmp_path / "c" / "config.json").read_text())
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [i - 1 for i in TRAINED_ON]  # +1 unconditional
    assert run(src, tmp_path / "d", "--to", "sglang", "--target", target, "--engine-version", "0.5.13") == 0
    config = json.loads((tmp_path / "d" / "config.json").read_text())
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == TRAINED_ON  # first id 3 != 1: used as is


@pytest.mark.network
def test_sglang_before_0_5_12_gets_midlayer_names_and_one_layer(tmp_path, capsys):
    from ckpt_builders import canonical_tensors, eagle_config

    tensors = canonical_tensors()
    for key in [k for k in tensors if k.startswith("layers.0.")]:
        if "hidden_norm" not in key:
            tensors["layers.1." + key[len("layers.0."):]] = tensors[key]
    config = eagle_config()
    config["num_hidden_layers"] = 2
    src = write_drafter(tmp_path / "src", "vllm", tensors=tensors, config=config)
    target = write_target(tmp_path / "tgt")
    assert run(src, tmp_path / "old", "--from", "eagle", "--to", "sglang", "--engine-version", "0.5.8", "--target", target) == 4
    assert "drafters with 2 layers" in capsys.readouterr().err
    assert run(src, tmp_path / "new", "--from", "eagle", "--to", "sglang", "--engine-version", "0.5.12", "--target", target) == 0
    from safetensors.numpy import load_file

    names = set(load_file(str(tmp_path / "new" / "model.safetensors")))
    assert "midlayer.self_attn.q_proj.weight" in names and "layers.1.self_attn.q_proj.weight" in names


@pytest.mark.network
@pytest.mark.parametrize("version, ok", [("0.16.0", False), ("0.18.0", True), ("0.33.0", True)])
def test_vllm_mla_drafter_gate(tmp_path, version, ok):
    src = write_drafter(tmp_path / "src", "mla")
    target = write_target(tmp_path / "tgt", family="deepseek")
    assert run(src, tmp_path / "out", "--to", "vllm", "--engine-version", version, "--target", target) == (0 if ok else 4)


@pytest.mark.network
def test_vllm_before_0_11_1_ignores_ids(tmp_path, capsys):
    from ckpt_builders import eagle_config

    target = write_target(tmp_path / "tgt")
    src = write_drafter(tmp_path / "src", "eagle")  # trained on [3, 5, 6], not the default [2, 4, 5]
    assert run(src, tmp_path / "a", "--to", "vllm", "--engine-version", "0.11.0", "--target", target) == 4
    assert "ignores drafter layer ids" in capsys.readouterr().err
    config = eagle_config()
    config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [1, 3, 4]  # output-of = the default set
    src = write_drafter(tmp_path / "src2", "eagle", config=config)
    assert run(src, tmp_path / "b", "--to", "vllm", "--engine-version", "0.11.0", "--target", target) == 0


@pytest.mark.network
def test_vllm_four_aux_layers_need_0_22(tmp_path, capsys):
    from ckpt_builders import canonical_tensors, vllm_config
    import numpy as np

    tensors = canonical_tensors()
    tensors["fc.weight"] = np.zeros((64, 4 * 64), np.float16)
    config = vllm_config()
    config["eagle_aux_hidden_state_layer_ids"] = [2, 3, 5, 6]
    src = write_drafter(tmp_path / "src", "vllm", tensors=tensors, config=config)
    told = ["--layer-ids-convention", "capture-before"]
    assert run(src, tmp_path / "a", "--to", "vllm", "--engine-version", "0.20.0", *told) == 4
    assert "3 aux hidden states" in capsys.readouterr().err
    assert run(src, tmp_path / "b", "--to", "vllm", "--engine-version", "0.22.0", *told) == 0
    assert json.loads((tmp_path / "b" / "config.json").read_text())["num_aux_hidden_states"] == 4


def test_speculators_norm_before_residual_refused_for_sglang(tmp_path, capsys):
    from ckpt_builders import speculators_config

    config = speculators_config()
    config["norm_before_residual"] = True
    src = write_drafter(tmp_path / "src", "speculators", config=config)
    target = write_target(tmp_path / "tgt")
    assert run(src, tmp_path / "out", "--to", "sglang", "--target", target) == 4
    assert "norm_before_residual" in capsys.readouterr().err
    assert run(src, tmp_path / "v", "--to", "vllm", "--target", target) == 0
    assert json.loads((tmp_path / "v" / "config.json").read_text())["norm_before_residual"] is True


def test_mla_nested_only_ids_are_ambiguous(tmp_path, capsys):
    config = mla_config()
    del config["eagle_aux_hidden_state_layer_ids"]
    src = write_drafter(tmp_path / "src", "mla", config=config)
    assert run(src, tmp_path / "out", "--to", "vllm") == 4
    assert "--layer-ids-convention" in capsys.readouterr().err


def test_sglang_source_without_record_read_by_from_flag(tmp_path, capsys):
    from ckpt_builders import eagle_config

    config = eagle_config()
    config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [1, 3, 4]  # first id 1: +1 on every release
    src = write_drafter(tmp_path / "src", "eagle", config=config)
    assert run(src, tmp_path / "out", "--from", "sglang", "--to", "vllm") == 0
    assert json.loads((tmp_path / "out" / "config.json").read_text())["eagle_aux_hidden_state_layer_ids"] == [2, 4, 5]
    assert run(src.parent / "src", tmp_path / "out2", "--from", "sglang", "--to", "vllm",
               "--layer-ids", "3", "5", "6") == 0


@pytest.mark.network
def test_kimi_specforge_template_ids_per_engine(tmp_path, capsys):
    """checkpoint-formats.md 4.4: a SpecForge Kimi template declares [2, 30, 58] (output-of), so the
    drafter saw capture-before [3, 31, 59]; each engine release must be told what feeds those."""
    from ckpt_builders import eagle_config

    config = eagle_config()
    config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [2, 30, 58]
    src = write_drafter(tmp_path / "src", "eagle", config=config)
    target = tmp_path / "kimi-k25"
    target.mkdir()
    (target / "config.json").write_text(json.dumps({  # Kimi-K2.5 wraps the language model in text_config
        "architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
        "text_config": {"model_type": "kimi_k2", "hidden_size": 64, "vocab_size": 256, "num_hidden_layers": 61}}))

    def ids(out):
        config = json.loads((out / "config.json").read_text())
        return config.get("eagle_aux_hidden_state_layer_ids"), (config.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")

    assert run(src, tmp_path / "vllm", "--to", "vllm", "--target", target, "--engine-version", "0.20.0") == 0
    assert ids(tmp_path / "vllm") == ([3, 31, 59], None)
    assert run(src, tmp_path / "sg12", "--to", "sglang", "--target", target, "--engine-version", "0.5.12") == 0
    assert ids(tmp_path / "sg12") == (None, [2, 30, 58])  # +1 unconditional
    assert run(src, tmp_path / "sg16", "--to", "sglang", "--target", target, "--engine-version", "0.5.16") == 0
    assert ids(tmp_path / "sg16") == (None, [3, 31, 59])  # first id != 1: used as capture-before
    assert run(src, tmp_path / "sg", "--to", "sglang", "--target", target) == 4  # no list works on both
    assert "--engine-version" in capsys.readouterr().err
    assert run(src, tmp_path / "dual", "--to", "eagle", "--target", target) == 0
    assert ids(tmp_path / "dual") == ([3, 31, 59], [2, 30, 58])


def test_top_level_ids_alone_are_not_capture_before_by_assumption(tmp_path, capsys):
    """Doctor and convert read a drafter the same way: top-level ids with nothing saying how they were written
    are refused until the convention is given (a SpecForge config copied there holds output-of ids)."""
    from ckpt_builders import vllm_config

    src = write_drafter(tmp_path / "src", "vllm", config=vllm_config())
    assert run(src, tmp_path / "a", "--to", "eagle") == 4
    err = capsys.readouterr().err
    assert "does not say which convention it uses" in err and "--layer-ids-convention" in err
    assert run(src, tmp_path / "b", "--to", "eagle", "--layer-ids-convention", "output-of") == 0
    written = json.loads((tmp_path / "b" / "compat_convert.json").read_text())["layer_ids"]
    assert written["basis"] == "flag" and written["capture_before"] == [i + 1 for i in vllm_config()["eagle_aux_hidden_state_layer_ids"]]
