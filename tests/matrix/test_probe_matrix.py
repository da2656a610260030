"""The compatibility matrix: every vLLM release from 0.10.0 and SGLang from 0.4.4, probed.

Each assertion compares a probe's reading of the real release with a fact established
independently in the research notes (research_facts.py cites the section).
"""

import pytest

from research_facts import (
    SGLANG_CONFIG_IDS_FROM,
    SGLANG_DEEPSEEK_CONDITIONAL_OFFSET_FROM,
    SGLANG_CUDA_GRAPH_QUIRK,
    SGLANG_DEEPSEEK_EAGLE3_FROM,
    SGLANG_EAGLE3_FROM,
    SGLANG_KIMI_K25_EAGLE3_FROM,
    SGLANG_MLA_DRAFTER_FROM,
    VLLM_CONFIG_IDS_FROM,
    VLLM_DEEPSEEK_EAGLE3_FROM,
    VLLM_KIMI_K25_EAGLE3_FROM,
    VLLM_MLA_DRAFTER_FROM,
    VLLM_NESTED_IDS_FROM,
    VLLM_V1_RUNNER_REMOVED_IN,
    VLLM_SC_ALIAS_FROM,
    VLLM_SPEC_FIELD_COUNT,
    VLLM_SPEC_SHORT_FLAGS_FROM,
    VLLM_SPECFORGE_NAME_FROM,
    VLLM_WHITELIST,
    since,
    value_at,
)

pytestmark = [pytest.mark.matrix, pytest.mark.network]


def _targets(report):
    return {t["class"]: t for t in report["eagle3_targets"]}


def _has_location(fact):
    path, _, line = fact["location"].rpartition(":")
    return path.endswith(".py") and line.isdigit()


# -- vLLM ----------------------------------------------------------------------------------
def test_vllm_release_is_probed_without_error(vllm_report, vllm_version):
    assert vllm_report["version"] == vllm_version
    assert vllm_report["probe_errors"] == []
    for key in ("speculative_config", "eagle3_whitelist", "eagle3_targets", "eagle3_drafters", "aux_layer_ids", "cli_flags"):
        value = vllm_report[key]
        assert not (isinstance(value, dict) and "error" in value), (key, value)


def test_vllm_whitelist(vllm_report, vllm_version):
    expected = value_at(VLLM_WHITELIST, vllm_version)
    whitelist = vllm_report["eagle3_whitelist"]
    if expected is None:
        assert whitelist["present"] is False
        return
    assert whitelist["present"] is True
    assert whitelist["model_types"] == expected
    assert whitelist["match"] == "substring"
    assert _has_location(whitelist)
    assert "speculative" in whitelist["location"] or whitelist["location"].startswith("vllm/config")


def test_vllm_speculative_config_fields(vllm_report, vllm_version):
    spec = vllm_report["speculative_config"]
    assert len(spec["fields"]) == value_at(VLLM_SPEC_FIELD_COUNT, vllm_version)
    names = [f["name"] for f in spec["fields"]]
    assert {"num_speculative_tokens", "model", "method"} <= set(names)
    assert ("disable_by_batch_size" in names) == (not since(vllm_version, "0.17.0"))
    assert "eagle3" in spec["methods"] and "eagle" in spec["methods"]
    assert _has_location(spec)


def test_vllm_deepseek_and_kimi_targets(vllm_report, vllm_version):
    targets = _targets(vllm_report)
    has_deepseek = since(vllm_version, VLLM_DEEPSEEK_EAGLE3_FROM)
    for cls in ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"):
        assert (cls in targets) == has_deepseek, cls
    if has_deepseek:
        assert "DeepseekV3ForCausalLM" in targets["DeepseekV3ForCausalLM"]["architectures"]
        assert targets["DeepseekV2ForCausalLM"]["layer_id_offset"] == 0  # vLLM never offsets EAGLE-3 ids
    assert ("KimiK25ForConditionalGeneration" in targets) == since(vllm_version, VLLM_KIMI_K25_EAGLE3_FROM)
    if since(vllm_version, "0.10.1"):  # the SupportsEagle3 protocol exists; Llama always implements it
        assert "LlamaForCausalLM" in targets["LlamaForCausalLM"]["architectures"]
    assert all(_has_location(t) for t in targets.values())


def test_vllm_drafters(vllm_report, vllm_version):
    drafters = set(vllm_report["eagle3_drafters"])
    assert "Eagle3LlamaForCausalLM" in drafters
    assert ("LlamaForCausalLMEagle3" in drafters) == since(vllm_version, VLLM_SPECFORGE_NAME_FROM)
    mla = {"Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM"}
    assert (mla <= drafters) == since(vllm_version, VLLM_MLA_DRAFTER_FROM)


def test_vllm_aux_layer_ids(vllm_report, vllm_version):
    aux = vllm_report["aux_layer_ids"]
    assert aux["read_from_config"] == since(vllm_version, VLLM_CONFIG_IDS_FROM)
    if not aux["read_from_config"]:
        return
    runners = {r["runner"]: r for r in aux["runners"]}
    assert ("v1" in runners) != since(vllm_version, VLLM_V1_RUNNER_REMOVED_IN)
    if "v1" not in runners:
        keys = {(k["key"], k["where"]): k for k in runners["v2"]["keys"]}
        assert keys[("eagle_aux_hidden_state_layer_ids", "top-level")]["offset"] == 0
        assert ("layer_ids", "eagle_config") in keys and ("eagle_aux_hidden_state_layer_ids", "eagle_config") not in keys
        return
    keys = {(k["key"], k["where"]): k for k in runners["v1"]["keys"]}
    top = keys[("eagle_aux_hidden_state_layer_ids", "top-level")]
    assert top["offset"] == 0
    assert (("eagle_aux_hidden_state_layer_ids", "eagle_config") in keys) == since(vllm_version, VLLM_NESTED_IDS_FROM)


def test_vllm_cli_flags(vllm_report, vllm_version):
    flags = {f["name"]: f for f in vllm_report["cli_flags"]}
    sc = flags["--speculative-config"]
    assert "json.loads" in sc["parse"]
    assert ("-sc" in (sc.get("aliases") or [])) == since(vllm_version, VLLM_SC_ALIAS_FROM)
    short = {"--spec-method", "--spec-model", "--spec-tokens"}
    assert (short <= set(flags)) == since(vllm_version, VLLM_SPEC_SHORT_FLAGS_FROM)


# -- SGLang --------------------------------------------------------------------------------
def test_sglang_release_is_probed_without_error(sglang_report, sglang_version):
    assert sglang_report["version"] == sglang_version
    assert sglang_report["probe_errors"] == []
    for key in ("server_args", "eagle3_whitelist", "eagle3_targets", "eagle3_drafters", "aux_layer_ids", "cli_flags"):
        value = sglang_report[key]
        assert not (isinstance(value, dict) and "error" in value), (key, value)
    assert sglang_report["eagle3_whitelist"]["present"] is False


def test_sglang_algorithms_and_flags(sglang_report, sglang_version):
    args = sglang_report["server_args"]
    assert ("EAGLE3" in args["algorithms"]) == since(sglang_version, SGLANG_EAGLE3_FROM)
    flags = {f["name"] for f in sglang_report["cli_flags"]}
    assert {"--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-steps"} <= flags


def test_sglang_targets_and_offsets(sglang_report, sglang_version):
    targets = _targets(sglang_report)
    if not since(sglang_version, SGLANG_EAGLE3_FROM):
        assert targets == {}
        return
    llama = targets["LlamaForCausalLM"]
    if since(sglang_version, SGLANG_CONFIG_IDS_FROM):
        assert llama["layer_id_offset"] == 1  # always +1 on the Llama path
    else:  # the hook exists but takes no ids: the defaults are always used
        assert llama["layer_id_offset"] is None and llama["accepts_layer_ids"] is False
    has_deepseek = since(sglang_version, SGLANG_DEEPSEEK_EAGLE3_FROM)
    for cls in ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"):
        assert (cls in targets) == has_deepseek, cls
    if has_deepseek:
        offset = targets["DeepseekV2ForCausalLM"]["layer_id_offset"]
        if since(sglang_version, SGLANG_DEEPSEEK_CONDITIONAL_OFFSET_FROM):
            assert isinstance(offset, dict) and offset["offset"] == 1 and "layer_ids[0] == 1" in offset["when"]
        else:
            assert offset == 1
    assert ("KimiK25ForConditionalGeneration" in targets) == since(sglang_version, SGLANG_KIMI_K25_EAGLE3_FROM)
    assert all(_has_location(t) for t in targets.values())


def test_sglang_aux_layer_ids(sglang_report, sglang_version):
    aux = sglang_report["aux_layer_ids"]
    reads = since(sglang_version, SGLANG_CONFIG_IDS_FROM)
    assert aux["read_from_config"] == reads
    if reads:
        assert {(k["key"], k["where"]) for k in aux["keys"]} >= {("eagle_aux_hidden_state_layer_ids", "eagle_config")}
    assert aux.get("cuda_graph_defaults_quirk", False) == (
        since(sglang_version, SGLANG_CUDA_GRAPH_QUIRK[0]) and not since(sglang_version, SGLANG_CUDA_GRAPH_QUIRK[1]))


def test_sglang_drafters(sglang_report, sglang_version):
    drafters = set(sglang_report["eagle3_drafters"])
    assert ("LlamaForCausalLMEagle3" in drafters) == since(sglang_version, SGLANG_EAGLE3_FROM)
    assert ("Eagle3DeepseekV2ForCausalLM" in drafters) == since(sglang_version, SGLANG_MLA_DRAFTER_FROM)
