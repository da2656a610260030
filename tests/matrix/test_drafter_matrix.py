"""The matrix for the drafter facts: loaders, architecture rewrites and method detection on every
release (vLLM 0.10.0+, SGLang 0.4.4+), against research_facts.py, plus: every location they give is
a real, non-empty line of that release's source.
"""

import pytest

import pinned
from compat.probes.drafter_replay import fc_input_width, land
from compat.probes.vllm.drafter_architecture_rename import eagle_architecture, mtp_rewrite
from compat.probes.vllm.method_autodetection import detect_method
from research_facts import (
    SGLANG_EAGLE3_FROM,
    SGLANG_FC_FROM_AUX_COUNT_FROM,
    SGLANG_LAYERS_0_AND_MULTI_LAYER_FROM,
    SGLANG_LLAMA_DRAFTER_KEYS_FROM,
    SGLANG_MLA_DRAFTER_FROM,
    SGLANG_MLA_DRAFTER_KEYS_FROM,
    SGLANG_MODEL_PREFIX_ACCEPTED_FROM,
    SGLANG_NEVER_REWRITTEN,
    SGLANG_NEXTN_REWRITES,
    VLLM_AUTO_WEIGHTS_LOADER_MODEL_FROM,
    VLLM_D2T_ONLY_WHEN_VOCAB_DIFFERS_FROM,
    VLLM_DRAFT_VOCAB_DEFAULT_FROM,
    VLLM_EAGLE3_PATH_DETECTED_FROM,
    VLLM_EAGLE3_SUFFIX_KEPT_FROM,
    VLLM_FC_FROM_AUX_COUNT_FROM,
    VLLM_KIMI_K3_MTP_FROM,
    VLLM_LLAMA_DRAFTER_KEYS_FROM,
    VLLM_LLAMA_DRAFTER_NESTED_KEYS_FROM,
    VLLM_METHOD_DETECTED_BY_REGISTRY_FROM,
    VLLM_METHOD_NONE_PRESET_FROM,
    VLLM_MLA_DRAFTER_FROM,
    VLLM_MTP_REWRITES_FROM,
    VLLM_MULTI_LAYER_FROM,
    VLLM_NEVER_REWRITTEN,
    VLLM_QWEN3_DRAFTER_FROM,
    VLLM_SPECFORGE_NAME_FROM,
    since,
    value_at,
)

pytestmark = [pytest.mark.matrix, pytest.mark.network]

# The SGLang releases with an EAGLE-3 drafter, with the MLA one, and those before EAGLE-3: a test runs where its fact is.
SGLANG_EAGLE3 = pinned.matrix("sglang", since=SGLANG_EAGLE3_FROM)
SGLANG_MLA = pinned.matrix("sglang", since=SGLANG_MLA_DRAFTER_FROM)
SGLANG_BEFORE_EAGLE3 = pinned.matrix("sglang", before=SGLANG_EAGLE3_FROM)

VLLM_KEYS = ("drafter_loader", "drafter_architecture_rename", "method_autodetection")
SGLANG_KEYS = ("drafter_loader", "drafter_architecture_rename")
NESTED_IDS = {"key": "eagle_aux_hidden_state_layer_ids", "where": "eagle_config", "use": "len"}
_trees: dict = {}


def _tree(engine, version):
    if (engine, version) not in _trees:
        _trees[(engine, version)] = pinned.fetch(engine, version)
    return _trees[(engine, version)]


def _locations(value, key=None):
    """Every file:line string a fact carries (location, *_location, registered*, used_at)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _locations(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _locations(v, key)
    elif isinstance(value, str) and key and (key.endswith("location") or key.startswith("registered") or key == "used_at"):
        yield value


def _assert_real_lines(report, engine, version, keys):
    tree = _tree(engine, version)
    seen = 0
    for key in keys:
        for loc in _locations(report[key]):
            path, _, line = loc.rpartition(":")
            assert line.isdigit(), (key, loc)
            lines = tree.text(path).split("\n")
            assert 1 <= int(line) <= len(lines) and lines[int(line) - 1].strip(), (key, loc)
            seen += 1
    assert seen, "no locations at all"


def _reads(entry):
    return {(r["key"], r["where"]): r for r in entry["config_reads"]}


# -- vLLM --------------------------------------------------------------------------------------
def test_vllm_drafter_facts_are_probed_and_located(vllm_report, vllm_version):
    for key in VLLM_KEYS:
        assert vllm_report[key]["present"] is True, key
        assert "error" not in vllm_report[key], vllm_report[key]
    for entry in vllm_report["drafter_loader"]["drafters"].values():
        assert "error" not in entry, entry
    _assert_real_lines(vllm_report, "vllm", vllm_version, VLLM_KEYS)


def test_vllm_drafter_classes_and_names(vllm_report, vllm_version):
    drafters = vllm_report["drafter_loader"]["drafters"]
    llama = drafters["Eagle3LlamaForCausalLM"]
    assert ("LlamaForCausalLMEagle3" in llama["architectures"]) == since(vllm_version, VLLM_SPECFORGE_NAME_FROM)
    assert ("Eagle3DeepseekV2ForCausalLM" in drafters) == since(vllm_version, VLLM_MLA_DRAFTER_FROM)
    assert ("Eagle3Qwen3ForCausalLM" in drafters) == since(vllm_version, VLLM_QWEN3_DRAFTER_FROM)
    if "Eagle3DeepseekV2ForCausalLM" in drafters:  # the V3 name is an alias of the V2 class
        assert set(drafters["Eagle3DeepseekV2ForCausalLM"]["architectures"]) == {"Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM"}
    for entry in drafters.values():
        # vLLM prefixes model. itself (a model.-prefixed checkpoint name becomes model.model.*), drops t2d,
        # renames d2t, renames midlayer. to layers.0.
        assert entry["model_prefix"]["mode"] == "always"
        assert {"contains": "lm_head"} in entry["model_prefix"]["unless"]
        assert entry["vocab_map"]["t2d"]["fate"] == "skip"
        assert entry["vocab_map"]["d2t"]["to"] == "draft_id_to_target_id"
        assert entry["samples"]["midlayer"] == entry["samples"]["layers_0"] == "load"
        assert entry["samples"]["model_prefixed"] != "load"


def test_vllm_unknown_names_and_model_prefix(vllm_report, vllm_version):
    drafters = vllm_report["drafter_loader"]["drafters"]
    auto = since(vllm_version, VLLM_AUTO_WEIGHTS_LOADER_MODEL_FROM)
    llama = drafters["Eagle3LlamaForCausalLM"]["unknown"]
    assert llama["result"] == "raise"  # KeyError in LlamaModel.load_weights, then AutoWeightsLoader's ValueError
    assert llama["by"] == ("AutoWeightsLoader" if auto else "LlamaModel.load_weights")
    # an fc.bias this drafter has no parameter for (trained with SGLang's `bias: true`): ignored from 0.25.0
    assert land(drafters["Eagle3LlamaForCausalLM"], "fc.bias")["fate"] == ("skip" if auto else "raise")
    mla = drafters.get("Eagle3DeepseekV2ForCausalLM")
    if mla is not None:
        if auto:
            assert mla["unknown"]["result"] == "raise" and mla["samples"]["model_prefixed"] == "raise"
        else:  # `if name not in params_dict: continue` outside the stacked branch; the stacked branch raises
            assert mla["unknown"] == {**mla["unknown"], "result": "mixed", "stacked": "raise", "other": "skip"}
            assert mla["samples"]["model_prefixed"] == "skip"


def test_vllm_layers_and_fc_width(vllm_report, vllm_version):
    llama = vllm_report["drafter_loader"]["drafters"]["Eagle3LlamaForCausalLM"]
    multi = since(vllm_version, VLLM_MULTI_LAYER_FROM)
    assert llama["layers"]["multi_layer"] == multi and llama["layers"]["rejects"] is None
    assert llama["samples"]["layers_1_of_2"] == ("load" if multi else "raise")  # one layer built: KeyError on layers.1
    for entry in vllm_report["drafter_loader"]["drafters"].values():
        fc = entry["fc"]
        assert fc["per_aux_width"][0]["key"] == "target_hidden_size" and fc["per_aux_width"][-1]["key"] == "hidden_size"
        if not since(vllm_version, VLLM_FC_FROM_AUX_COUNT_FROM):
            assert fc["fixed_aux_count"] == 3 and fc["aux_count"] == [{"default": 3}]
            continue
        assert fc["fixed_aux_count"] is None and fc["aux_count"][-1] == {"default": 3}
        keys = [(s.get("key"), s.get("where")) for s in fc["aux_count"] if "key" in s]
        assert ("num_aux_hidden_states", "top-level") in keys and NESTED_IDS in fc["aux_count"]
        # The Llama and MLA drafters count only the nested eagle_config ids, not the top-level ones.
        top_ids = ("eagle_aux_hidden_state_layer_ids", "top-level") in keys
        assert top_ids == (entry["class"] == "Eagle3Qwen3ForCausalLM")


KIMI_NESTED_4 = {"hidden_size": 7168, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58, 60]}}
KIMI_TOP_4 = {"hidden_size": 7168, "eagle_aux_hidden_state_layer_ids": [2, 30, 58, 60]}


def test_vllm_fc_width_for_four_ids(vllm_report, vllm_version):
    """Issue 9's 4-id drafters: which fc width the Llama drafter builds (the runner feeds 4 states from 0.11.1)."""
    llama = vllm_report["drafter_loader"]["drafters"]["Eagle3LlamaForCausalLM"]
    counted = since(vllm_version, VLLM_FC_FROM_AUX_COUNT_FROM)
    assert fc_input_width(llama, KIMI_NESTED_4)["width"] == (4 if counted else 3) * 7168
    assert fc_input_width(llama, KIMI_TOP_4)["width"] == 3 * 7168  # top-level ids never size the Llama drafter's fc


def test_vllm_draft_id_to_target_id(vllm_report, vllm_version):
    only_when_differs = since(vllm_version, VLLM_D2T_ONLY_WHEN_VOCAB_DIFFERS_FROM)
    for entry in vllm_report["drafter_loader"]["drafters"].values():
        assert entry["vocab_map"]["d2t"]["only_when_vocab_differs"] == only_when_differs
        full_vocab = {"vocab_size": 1000, "draft_vocab_size": 1000}
        fate = land(entry, "d2t", full_vocab, {"d2t", "fc.weight"}, target_vocab=1000)["fate"]
        assert fate == ("raise" if only_when_differs else "load")  # "no module or parameter named draft_id_to_target_id"
        small = land(entry, "d2t", {"vocab_size": 1000, "draft_vocab_size": 100}, {"d2t"}, target_vocab=1000)
        assert small["fate"] == "load"


def test_vllm_llama_drafter_config_keys(vllm_report, vllm_version):
    reads = _reads(vllm_report["drafter_loader"]["drafters"]["Eagle3LlamaForCausalLM"])
    for key, first in VLLM_LLAMA_DRAFTER_KEYS_FROM.items():
        assert ((key, "top-level") in reads) == since(vllm_version, first), key
    for key, first in VLLM_LLAMA_DRAFTER_NESTED_KEYS_FROM.items():
        assert ((key, "eagle_config") in reads) == since(vllm_version, first), key
    assert ("norm_before_residual", "top-level") not in reads or reads[("norm_before_residual", "top-level")]["default"] is False
    draft_vocab = reads[("draft_vocab_size", "top-level")]
    assert draft_vocab["read_without_default"] == (not since(vllm_version, VLLM_DRAFT_VOCAB_DEFAULT_FROM))
    assert "hasattr" in reads[("target_hidden_size", "top-level")]["access"] or "getattr" in reads[("target_hidden_size", "top-level")]["access"]


def test_vllm_eagle_config_rename(vllm_report, vllm_version):
    fact = vllm_report["drafter_architecture_rename"]
    assert eagle_architecture(fact, "eagle3", "LlamaForCausalLM") == "Eagle3LlamaForCausalLM"
    assert eagle_architecture(fact, "eagle3", "DeepseekV3ForCausalLM") == "Eagle3DeepseekV3ForCausalLM"
    assert eagle_architecture(fact, "eagle3", "Eagle3LlamaForCausalLM") == "Eagle3LlamaForCausalLM"
    kept = since(vllm_version, VLLM_EAGLE3_SUFFIX_KEPT_FROM)
    assert eagle_architecture(fact, "eagle3", "LlamaForCausalLMEagle3") == (
        "LlamaForCausalLMEagle3" if kept else "Eagle3LlamaForCausalLMEagle3")
    assert fact["eagle_config"]["location"].startswith("vllm/transformers_utils/configs/eagle.py:")


def test_vllm_mtp_override(vllm_report, vllm_version):
    fact = vllm_report["drafter_architecture_rename"]
    rewritten = fact["mtp_override"]["model_types"]
    for model_type, first in VLLM_MTP_REWRITES_FROM.items():
        assert (model_type in rewritten and rewritten[model_type]["model_type"] == "deepseek_mtp") == since(vllm_version, first), model_type
    assert ("kimi_k3" in rewritten) == since(vllm_version, VLLM_KIMI_K3_MTP_FROM)
    for model_type in VLLM_NEVER_REWRITTEN:
        assert model_type not in rewritten and mtp_rewrite(fact, model_type, "X") is None
    deepseek = mtp_rewrite(fact, "deepseek_v3", "DeepseekV3ForCausalLM")
    assert "DeepSeekMTPModel" in deepseek["architectures"]
    assert all(loc in fact["mtp_override"]["used_at"] or loc for loc in deepseek["locations"])


def test_vllm_method_autodetection(vllm_report, vllm_version):
    fact = vllm_report["method_autodetection"]
    assert {"eagle", "eagle3"} <= set(fact["explicit_methods"])
    fixed = since(vllm_version, VLLM_EAGLE3_PATH_DETECTED_FROM)
    samples = fact["samples"]
    assert samples["yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"] == ("eagle3" if fixed else "eagle")  # the trap
    assert (samples["AngelSlim/Qwen3-8B_eagle3"] == "eagle3") == fixed
    assert samples["yuhuili/EAGLE-LLaMA3-Instruct-8B"] == "eagle"
    registry = since(vllm_version, VLLM_METHOD_DETECTED_BY_REGISTRY_FROM)
    assert (fact["method_none"] is not None) == (since(vllm_version, VLLM_METHOD_NONE_PRESET_FROM) and not registry)
    assert (fact.get("declared") is not None) == registry  # a speculators config's declaration comes first
    assert detect_method(fact, "eagle3", "yuhuili/EAGLE-anything")["method"] == "eagle3"  # explicit wins
    taken = detect_method(fact, None, "/models/my-eagle3-drafter")
    assert taken["method"] == ("eagle3" if fixed else "eagle") and taken["location"]


# -- SGLang -------------------------------------------------------------------------------------
def _sglang_drafters(report, version):
    fact = report["drafter_loader"]
    assert fact["present"] is True and fact["drafters"], fact
    return fact["drafters"]


@pytest.mark.parametrize("sglang_version", SGLANG_BEFORE_EAGLE3)
def test_sglang_before_eagle3_loads_no_drafter(sglang_report, sglang_version):
    fact = sglang_report["drafter_loader"]
    assert fact["present"] is False and not fact["drafters"], fact


def test_sglang_drafter_facts_are_probed_and_located(sglang_report, sglang_version):
    assert sglang_report["drafter_architecture_rename"]["present"] is True
    for key in SGLANG_KEYS:
        assert "error" not in sglang_report[key], sglang_report[key]
    for entry in sglang_report["drafter_loader"]["drafters"].values():
        assert "error" not in entry, entry
    _assert_real_lines(sglang_report, "sglang", sglang_version, SGLANG_KEYS)


@pytest.mark.parametrize("sglang_version", SGLANG_EAGLE3)
def test_sglang_llama_drafter_names(sglang_report, sglang_version):
    drafters = _sglang_drafters(sglang_report, sglang_version)
    assert ("Eagle3DeepseekV2ForCausalLM" in drafters) == since(sglang_version, SGLANG_MLA_DRAFTER_FROM)
    llama = drafters["LlamaForCausalLMEagle3"]
    prefixed = since(sglang_version, SGLANG_MODEL_PREFIX_ACCEPTED_FROM)
    layers_0 = since(sglang_version, SGLANG_LAYERS_0_AND_MULTI_LAYER_FROM)
    assert llama["model_prefix"]["mode"] == ("if_missing" if prefixed else "always")
    assert (llama["samples"]["model_prefixed"] == "load") == prefixed
    assert llama["samples"]["midlayer"] == "load"
    # before 0.5.12 a layers.0.* name has no parameter: dropped silently (0.4.9+) or with a warning
    assert llama["samples"]["layers_0"] == ("load" if layers_0 else "skip" if prefixed else "warn")
    assert llama["vocab_map"]["d2t"] == {**llama["vocab_map"]["d2t"], "fate": "consume", "into": "hot_token_id"}
    assert llama["vocab_map"]["t2d"]["fate"] == "skip"
    if prefixed:  # the drafter's own loop: no name raises
        assert llama["unknown"]["result"] == "skip"
    else:  # handed to LlamaForCausalLM.load_weights: stacked names raise, others warn
        assert llama["delegates_to"]["class"] == "LlamaForCausalLM"
        assert (llama["unknown"]["stacked"], llama["unknown"]["other"]) == ("raise", "warn")


@pytest.mark.parametrize("sglang_version", SGLANG_EAGLE3)
def test_sglang_layers_fc_and_keys(sglang_report, sglang_version):
    drafters = _sglang_drafters(sglang_report, sglang_version)
    llama = drafters["LlamaForCausalLMEagle3"]
    multi = since(sglang_version, SGLANG_LAYERS_0_AND_MULTI_LAYER_FROM)
    assert llama["layers"]["multi_layer"] == multi
    assert (llama["layers"]["rejects"] is None) == multi
    if not multi:
        assert llama["layers"]["rejects"]["error"] == "EAGLE3 currently only supports 1 layer"
    fc = llama["fc"]
    if since(sglang_version, SGLANG_FC_FROM_AUX_COUNT_FROM):
        assert fc["aux_count"] == [{"key": "num_aux_hidden_states", "where": "top-level", "use": "value"}, NESTED_IDS, {"default": 3}]
    else:
        assert fc["fixed_aux_count"] == 3
    assert fc["bias"] == ([{"key": "bias", "where": "top-level", "use": "value"}, {"default": False}]
                          if since(sglang_version, SGLANG_MODEL_PREFIX_ACCEPTED_FROM) else [{"default": True}])
    reads = _reads(llama)
    for key, first in SGLANG_LLAMA_DRAFTER_KEYS_FROM.items():
        assert ((key, "top-level") in reads) == since(sglang_version, first), key
    assert ("norm_before_residual", "top-level") not in reads  # SGLang never implements it
    assert (("norm_before_fc", "eagle_config") in reads) == since(sglang_version, SGLANG_LLAMA_DRAFTER_KEYS_FROM["norm_before_fc"])


@pytest.mark.parametrize("sglang_version", SGLANG_EAGLE3)
def test_sglang_fc_width_for_four_ids(sglang_report, sglang_version):
    drafters = _sglang_drafters(sglang_report, sglang_version)
    counted = since(sglang_version, SGLANG_FC_FROM_AUX_COUNT_FROM)
    assert fc_input_width(drafters["LlamaForCausalLMEagle3"], KIMI_NESTED_4)["width"] == (4 if counted else 3) * 7168
    assert fc_input_width(drafters["LlamaForCausalLMEagle3"], KIMI_TOP_4)["width"] == 3 * 7168
    if "Eagle3DeepseekV2ForCausalLM" in drafters:  # the MLA drafter also counts top-level ids
        assert fc_input_width(drafters["Eagle3DeepseekV2ForCausalLM"], KIMI_TOP_4)["width"] == 4 * 7168


@pytest.mark.parametrize("sglang_version", SGLANG_MLA)
def test_sglang_mla_drafter(sglang_report, sglang_version):
    mla = _sglang_drafters(sglang_report, sglang_version)["Eagle3DeepseekV2ForCausalLM"]
    assert mla["layers"]["multi_layer"] is False and "1 layer" in mla["layers"]["rejects"]["error"]
    assert mla["model_prefix"]["mode"] == "always"
    assert mla["samples"]["layers_0"] == mla["samples"]["midlayer"] == "load"  # ^layers.0. -> midlayer.
    assert mla["samples"]["model_prefixed"] == "warn"  # "Eagle3 MLA: skipping unexpected weight"
    assert NESTED_IDS in mla["fc"]["aux_count"] and mla["fc"]["aux_count"][-1] == {"default": 3}
    reads = _reads(mla)
    for key, first in SGLANG_MLA_DRAFTER_KEYS_FROM.items():
        assert ((key, "top-level") in reads) == since(sglang_version, first), key
    assert ("norm_before_fc", "top-level") not in reads and ("num_aux_hidden_states", "top-level") not in reads


def test_sglang_nextn_rewrites(sglang_report, sglang_version):
    fact = sglang_report["drafter_architecture_rename"]
    assert fact["eagle3_rename"] is None
    for arch, table in SGLANG_NEXTN_REWRITES.items():
        expected = value_at(table, sglang_version)
        got = fact["architectures"].get(arch)
        assert (got["to"] if got else None) == ([expected] if expected else None), arch
    for arch in SGLANG_NEVER_REWRITTEN:
        assert arch not in fact["architectures"], arch
