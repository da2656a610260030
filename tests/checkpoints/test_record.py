"""The provenance record (compat_convert.json): its stable layout, and what it says about each source."""

from __future__ import annotations

import json

import pytest

from compat import __version__
from compat.checkpoints import RECORD_KEY, RECORD_SCHEMA, TRAINERS, compat_record
from compat.cli import main as compat_main
from ckpt_builders import TRAINED_ON, eagle_config, write_drafter, write_target

TOP_KEYS = {"schema", "carried", "tool", "compat_version", "layout", "engine", "engine_version", "target_family", "target", "source",
            "layer_ids", "notes", "verified", "checksum", "tensors"}
LAYER_ID_KEYS = {"capture_before", "basis", "from_record", "origin", "declared", "declared_field", "declared_convention", "written"}


def run(*args) -> int:
    return compat_main(["convert", "ckpt", *(str(a) for a in args)])


def record(out) -> dict:
    return json.loads((out / "compat_convert.json").read_text())


def kimi_k25(tmp_path):
    target = tmp_path / "kimi-k25"
    target.mkdir()
    (target / "config.json").write_text(json.dumps({
        "architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
        "text_config": {"model_type": "kimi_k2", "hidden_size": 64, "vocab_size": 256, "num_hidden_layers": 61}}))
    return target


@pytest.mark.network
def test_the_layout_of_the_record(tmp_path, drafter, llama_target):
    assert run(drafter("eagle"), tmp_path / "out", "--to", "vllm", "--target", llama_target, "--engine-version", "0.20.0") == 0
    rec = record(tmp_path / "out")
    assert set(rec) == TOP_KEYS and set(rec["layer_ids"]) == LAYER_ID_KEYS
    assert rec["schema"] == RECORD_SCHEMA == "compat.convert-record/1" and rec["compat_version"] == __version__
    assert (rec["layout"], rec["engine"], rec["engine_version"], rec["target_family"]) == ("vllm", "vllm", "0.20.0", "llama")
    assert rec["target"] == {"path": str(llama_target), "model_type": "llama", "architecture": "LlamaForCausalLM",
                             "num_hidden_layers": 8, "hidden_size": 64, "vocab_size": 256}
    assert rec["source"]["layout"] == "eagle" and rec["source"]["format"] == "safetensors"
    assert rec["source"]["trainer"] == {"id": "specforge-angelslim-eagle", "description": TRAINERS["specforge-angelslim-eagle"],
                                        "from": "layout"}
    ids = rec["layer_ids"]
    # the SpecForge fingerprint (midlayer.*, LlamaForCausalLMEagle3, ids only in eagle_config) settles output-of
    assert ids["capture_before"] == TRAINED_ON and ids["basis"] == "fingerprint" and ids["from_record"] is False
    assert ids["declared"] == [i - 1 for i in TRAINED_ON] and ids["declared_convention"] == "output-of"
    assert ids["declared_field"] == "eagle_config.eagle_aux_hidden_state_layer_ids"
    assert ids["written"] == {"eagle_aux_hidden_state_layer_ids": TRAINED_ON}


def test_modelopt_ids_read_by_the_flag(tmp_path):
    config = eagle_config()
    config["eagle_config"]["use_mtp_layernorm"] = False  # a ModelOpt export: the convention is not implied
    src = write_drafter(tmp_path / "src", "eagle", config=config)
    assert run(src, tmp_path / "out", "--to", "vllm", "--layer-ids-convention", "capture-before") == 0
    rec = record(tmp_path / "out")
    assert rec["source"]["trainer"]["id"] == "modelopt"
    assert rec["layer_ids"]["basis"] == "flag" and rec["layer_ids"]["declared_convention"] == "capture-before"
    assert rec["layer_ids"]["capture_before"] == [i - 1 for i in TRAINED_ON]
    assert rec["target"] is None and rec["target_family"] is None


def test_layer_ids_from_the_command_line(tmp_path, drafter):
    assert run(drafter("eagle"), tmp_path / "out", "--to", "vllm", "--layer-ids", "2", "4", "5",
               "--layer-ids-convention", "output-of") == 0
    ids = record(tmp_path / "out")["layer_ids"]
    assert (ids["basis"], ids["declared_field"], ids["declared"], ids["capture_before"]) == ("command-line", "--layer-ids", [2, 4, 5], [3, 5, 6])


@pytest.mark.parametrize("with_target", [True, False])
def test_undeclared_ids(tmp_path, with_target):
    config = eagle_config()
    config["architectures"] = ["LlamaForCausalLM"]
    del config["eagle_config"]
    src = write_drafter(tmp_path / "src", "eagle", config=config)
    target = write_target(tmp_path / "tgt", layers=32)
    assert run(src, tmp_path / "out", "--to", "vllm", *(["--target", target] if with_target else [])) == 0
    ids = record(tmp_path / "out")["layer_ids"]
    if with_target:
        assert ids["basis"] == "engine-default" and ids["capture_before"] == [2, 16, 29]
    else:
        assert ids["basis"] == "undeclared" and ids["capture_before"] is None and ids["declared"] is None


@pytest.mark.network
def test_the_seed_case_through_sglang_and_back(tmp_path):
    """SpecForge drafter for Kimi-K2.5 ([2, 30, 58] nested, output-of): written for SGLang 0.5.16 it declares
    [3, 31, 59] (used as capture-before there); converting that output again reads its record, not a guess."""
    config = eagle_config()
    config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [2, 30, 58]
    src = write_drafter(tmp_path / "src", "eagle", config=config)
    target = kimi_k25(tmp_path)
    sglang = tmp_path / "sglang"
    assert run(src, sglang, "--to", "sglang", "--target", target, "--engine-version", "0.5.16") == 0
    first = record(sglang)
    assert first["target_family"] == "deepseek" and first["layer_ids"]["capture_before"] == [3, 31, 59]
    assert first["layer_ids"]["written"] == {"eagle_config.eagle_aux_hidden_state_layer_ids": [3, 31, 59]}
    config_with_record = {**json.loads((sglang / "config.json").read_text()), RECORD_KEY: first}
    assert compat_record(config_with_record) == first and compat_record({RECORD_KEY: {"layout": "x"}}) is None

    back = tmp_path / "vllm"
    assert run(sglang, back, "--to", "vllm") == 0  # no --target, no --engine-version: the record says both
    second = record(back)
    assert second["layer_ids"]["capture_before"] == [3, 31, 59] and second["layer_ids"]["from_record"] is True
    assert second["layer_ids"]["basis"] == "fingerprint"  # the first conversion's basis, carried over
    assert second["source"]["layout"] == "sglang"
    assert second["source"]["trainer"] == {**first["source"]["trainer"], "from": "record"}


def test_flag_basis_survives_a_second_conversion(tmp_path):
    config = eagle_config()
    config["eagle_config"]["use_mtp_layernorm"] = False
    src = write_drafter(tmp_path / "src", "eagle", config=config)
    assert run(src, tmp_path / "a", "--to", "vllm", "--layer-ids-convention", "output-of") == 0
    assert run(tmp_path / "a", tmp_path / "b", "--to", "speculators") == 0
    ids = record(tmp_path / "b")["layer_ids"]
    assert ids["basis"] == "flag" and ids["from_record"] and ids["capture_before"] == TRAINED_ON
    assert record(tmp_path / "b")["source"]["trainer"]["id"] == "modelopt"


def test_a_plan_tells_the_record_it_would_write(tmp_path, drafter, llama_target):
    """doctor previews a conversion with make_plan; build_record(plan) is what execute(plan) then writes."""
    from compat.convert import Options, build_record, execute, make_plan

    plan = make_plan(Options(src=drafter("eagle"), dst=tmp_path / "out", to="sglang", target=llama_target))
    preview = build_record(plan)
    execute(plan, progress=False)
    assert preview == record(tmp_path / "out")
