"""LMDeploy's probes on its real releases (pinned: tests/releases.json), against facts read from those releases by
hand (lmdeploy/cli/utils.py add_spec_group, lmdeploy/pytorch/spec_decode/proposers, pytorch/configurations), and
its engine unit (compat/engines/lmdeploy.py) against what the probes read on each release.

LMDeploy needs CUDA: nothing here runs it. What is checked is what its source says.
"""

from __future__ import annotations

import pytest
from packaging.version import Version

import pinned
from compat import engines
from compat.report import build_report

pytestmark = [pytest.mark.network, pytest.mark.matrix]

RELEASES = pinned.versions("lmdeploy")
_reports: dict[str, dict] = {}

# when each method reached `--speculative-algorithm`'s choices (read in each release's lmdeploy/cli/utils.py)
METHODS_FROM = {"eagle": "0.11.0", "eagle3": "0.11.0", "deepseek_mtp": "0.11.0", "qwen3_5_mtp": "0.12.3",
                "hy3_mtp": "0.16.0", "dflash": "0.18.0"}
KIMI_EAGLE3_FROM = "0.17.0"  # configurations/kimi_k2.py sets aux_hidden_state_layers; models/kimi_k25_eagle3.py


def report(version: str) -> dict:
    if version not in _reports:
        _reports[version] = build_report(pinned.fetch("lmdeploy", version))
    return _reports[version]


def since(version: str, first: str) -> bool:
    return Version(version) >= Version(first)


@pytest.mark.parametrize("version", RELEASES)
def test_every_probe_reads_the_release(version):
    found = report(version)
    assert found["version"] == version and found["probe_errors"] == []


@pytest.mark.parametrize("version", RELEASES)
def test_methods_flags_and_proposers(version):
    found = report(version)
    expected = [m for m, first in METHODS_FROM.items() if since(version, first)]
    methods = found["methods"]
    if not expected:  # 0.10.0: no speculative decoding at all
        assert methods["present"] is False and found["cli_flags"] == [] and found["draft_models"] == []
        assert found["speculative_config"]["present"] is False and found["speculative_backend"]["present"] is False
        return
    assert sorted(methods["accepted"]) == sorted(expected)
    assert sorted(methods["workers"]) == sorted(expected) and methods["without_proposer"] == []
    flags = [f["name"] for f in found["cli_flags"]]
    assert flags[:3] == ["--speculative-algorithm", "--speculative-draft-model", "--speculative-num-draft-tokens"]
    assert ("--speculative-dflash-block-size" in flags) == since(version, "0.18.0")
    assert all(f["location"].startswith("lmdeploy/cli/") for f in found["cli_flags"])
    assert "api_server" in {c["command"] for c in found["cli_flags"][0]["commands"]}
    fields = [f["name"] for f in found["speculative_config"]["fields"]]
    assert fields[:3] == ["method", "model", "num_speculative_tokens"] and ("dflash_block_size" in fields) == since(version, "0.18.0")


@pytest.mark.parametrize("version", [v for v in RELEASES if since(v, "0.11.0")])
def test_eagle3_targets_drafts_and_layer_ids(version):
    found = report(version)
    targets = {t["class"] for t in found["eagle3_targets"]}
    assert targets == {"LlamaForCausalLM"} | ({"KimiK25ForConditionalGeneration"} if since(version, KIMI_EAGLE3_FROM) else set())
    drafts = {d["architecture"]: d for d in found["draft_models"]}
    assert drafts["Eagle3LlamaForCausalLM"]["location"].startswith("lmdeploy/pytorch/models/llama_eagle3.py:")
    assert ("Eagle3DeepseekV2ForCausalLM" in drafts) == since(version, KIMI_EAGLE3_FROM)
    rename = found["drafter_architecture_rename"]["rules"][0]
    assert rename["applies_to"] == ["LlamaForCausalLM"] and rename["produces"]["eagle3:LlamaForCausalLM"]["in_module_map"]
    aux = found["aux_layer_ids"]
    assert aux["read_from_config"] is False and aux["default"] == "(2, n // 2, n - 3)"
    backend = found["speculative_backend"]
    assert backend["flag"]["default"] == "turbomind" and backend["drops"]["raises"] is False


@pytest.mark.parametrize("version", [v for v in RELEASES if since(v, "0.11.0")])
def test_the_unit_says_what_each_release_does(version):
    """The fields the code branches on (compat/engines/lmdeploy.py), compared with what the probes read."""
    unit, found = engines.get("lmdeploy"), report(version)
    flags = {f["name"] for f in found["cli_flags"]}
    assert not unit.spec_in_config and "--speculative-config" not in flags and "--speculative-algorithm" in flags
    assert unit.draft_shape == "chain" and not any("topk" in f for f in flags)  # no tree to give
    assert unit.target_gate == "config_builder" and all(t["layers_set_by"] for t in found["eagle3_targets"])
    assert unit.layer_ids_fed_by == "config_builder" and all(not t["accepts_layer_ids"] for t in found["eagle3_targets"])
    assert found["version_in_source"]["location"].startswith(unit.version_files[0])
    assert found["methods"]["case"] == "as typed"


@pytest.mark.parametrize("version", RELEASES)
def test_the_facts_doctors_checks_read(version):
    """What the second wave reads (issue 39), against each release's source read by hand: the draft a checkpoint
    declares (LlamaForCausalLM, renamed by configurations/llama.py), how Eagle3LlamaForCausalLM loads it
    (models/llama_eagle3.py load_weights: `model.` + name, d2t renamed, t2d skipped), the Kimi MLA drafter (0.17.0+,
    models/kimi_k25_eagle3.py: `model.` stripped, layers.0 -> midlayer), captures before each layer only
    (models/llama.py), the draft's dtype resolved on its own config, and api_server's arguments."""
    found = report(version)
    args = {a["name"]: a for a in found["cli_arguments"]["arguments"]}
    assert found["cli_arguments"]["arguments"][0]["name"] == "model_path" and args["model_path"]["value"] == "positional"
    assert args["--backend"]["choices"] == ["pytorch", "turbomind"] and args["--dtype"]["default"] == "auto"
    assert found["cli_arguments"]["parser"]["underscores_to_dashes"] is True
    assert {f["name"] for f in found["cli_flags"]} <= set(args)  # every speculative flag, among api_server's arguments
    assert "LlamaForCausalLM" in found["target_architectures"] and found["eagle3_whitelist"]["present"] is False
    if not since(version, "0.11.0"):
        assert found["eagle3_drafters"] == [] and found["drafter_loader"]["present"] is False
        assert found["draft_dtype"]["present"] is False
        return
    kimi = since(version, KIMI_EAGLE3_FROM)
    assert found["eagle3_drafters"] == (["Eagle3DeepseekV2ForCausalLM"] if kimi else []) + ["LlamaForCausalLM"]
    llama = found["drafter_loader"]["drafters"]["Eagle3LlamaForCausalLM"]
    assert llama["architectures"] == ["LlamaForCausalLM"]
    assert llama["samples"] == {"model_prefixed": "raise", "midlayer": "load", "layers_0": "raise", "layers_1_of_2": "raise"}
    assert (llama["vocab_map"]["d2t"]["to"], llama["vocab_map"]["t2d"]["fate"]) == ("draft_id_to_target_id", "skip")
    assert llama["layers"]["rejects"]["error"] == "eagle3 only supports 1 decode layer"
    if kimi:
        mla = found["drafter_loader"]["drafters"]["Eagle3DeepseekV2ForCausalLM"]
        assert mla["samples"]["layers_0"] == "load" and mla["samples"]["model_prefixed"] == "load"
        assert mla["vocab_map"]["d2t"] == {**mla["vocab_map"]["d2t"], "fate": "consume", "into": "draft_id_to_target_id"}
    capture = found["final_layer_capture"]
    assert set(capture["before_final"]) == {t["class"] for t in found["eagle3_targets"]} and capture["unresolved"] == {}
    assert [k for k in capture if k not in ("before_final", "unresolved")] == []  # no class captures id n
    dtype = found["draft_dtype"]
    assert dtype["auto_from"] == "draft" and dtype["given_by"] == "engine_config.dtype"
    assert found["method_packages"]["methods"]["eagle3"] == []  # no package beyond LMDeploy's own
