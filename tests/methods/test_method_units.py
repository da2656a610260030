"""The method files: their contract, the names they give each engine with the version gates, and how a drafter is
recognised, from each trainer's real config keys and tensor names (the trainer's file named at each case)."""

import pytest

from compat.methods import (CONTRACT, OUTPUT_OF, Name, Recognition, Unrecognised, all_methods, find_name, get_method,
                            recognise_drafter)
from compat.core.registry import ContractError

# SpecForge a6b6b02 configs/qwen3-8b-dflash.json (the keys that matter)
SPECFORGE_DFLASH = {"architectures": ["DFlashDraftModel"], "auto_map": {"AutoModel": "dflash.DFlashDraftModel"},
                    "block_size": 16, "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 33]},
                    "model_type": "qwen3", "num_hidden_layers": 5, "num_target_layers": 36, "hidden_size": 4096,
                    "vocab_size": 151936}
# SpecForge configs/qwen3-8b-dspark.json
SPECFORGE_DSPARK = {"architectures": ["DSparkDraftModel"], "auto_map": {"AutoModel": "dspark.DSparkDraftModel"},
                    "block_size": 7, "dflash_config": {"attention_mode": "gqa", "markov_rank": 256, "mask_token_id": 151669,
                                                       "projector_type": "dspark", "target_layer_ids": [1, 9, 17, 25, 33]},
                    "model_type": "qwen3", "num_target_layers": 36, "hidden_size": 4096, "vocab_size": 151936}
# SpecForge configs/qwen3-8b-peagle.json
SPECFORGE_PEAGLE = {"architectures": ["PEagleDraftModel"], "model_type": "llama", "num_hidden_layers": 4,
                    "hidden_size": 4096, "vocab_size": 151936, "draft_vocab_size": 32000}
# speculators c05b95b src/speculators/models/dflash/config.py, dspark/config.py, peagle/config.py (serialised fields)
SPECULATORS_DFLASH = {"speculators_model_type": "dflash", "architectures": ["DFlashSpeculator"], "block_size": 8,
                      "aux_hidden_state_layer_ids": [2, 18, 33], "mask_token_id": 151669, "sample_from_anchor": False,
                      "speculators_config": {"algorithm": "dflash"}, "transformer_layer_config": {"model_type": "qwen3"}}
SPECULATORS_DSPARK = {**SPECULATORS_DFLASH, "speculators_model_type": "dspark", "architectures": ["DSparkSpeculator"],
                      "markov_rank": 256, "sample_from_anchor": True}
SPECULATORS_PEAGLE = {"speculators_model_type": "peagle", "architectures": ["PEagleSpeculator"], "mask_token_id": 128002}
# DeepSeek-V3's config.json (MTP heads in layer 61)
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 61,
               "num_nextn_predict_layers": 1, "hidden_size": 7168, "vocab_size": 129280}
QWEN3_06B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 151936, "hidden_size": 1024}


def test_every_method_file_meets_the_contract_and_names_are_unique_per_engine():
    methods = all_methods()
    assert {m.family for m in methods} >= {"eagle", "eagle3", "peagle", "dflash", "dspark", "uno", "mtp", "draft_model",
                                           "ngram", "suffix"}
    for engine in ("vllm", "sglang"):
        owned = [(n.name, m.family) for m in methods for n in m.engine_names(engine) if not n.shared]
        assert len({name for name, _ in owned}) == len(owned), owned
    with pytest.raises(ContractError, match="TAKES_DRAFTER"):
        CONTRACT.values("methods.broken", {"FAMILY": "x", "TITLE": "x", "DESCRIPTION": "x", "NAMES": {},
                                           "recognise": lambda c, t: None})


def test_names_map_to_their_family_with_the_alias_said():
    nextn = find_name("sglang", "NEXTN")
    assert nextn is not None and nextn.method.family == "mtp" and nextn.name.alias_of == "EAGLE"
    assert find_name("vllm", "eagle3").method.family == "eagle3"  # not P-EAGLE, which only shares the name
    assert find_name("vllm", "kimi_k3_mtp").method.family == "mtp"
    folded = find_name("sglang", "dflash")
    assert folded is not None and folded.method.family == "dflash" and folded.exact is False
    assert find_name("vllm", "no_such_method") is None


@pytest.mark.parametrize("gate, version, accepted", [
    (Name("DFLASH", since="0.5.11"), "0.5.10.post1", False), (Name("DFLASH", since="0.5.11"), "0.5.11", True),
    (Name("eagle3", since="0.22.0", until="0.33.0"), "0.34.0", False), (Name("eagle3", since="0.22.0", until="0.33.0"), "0.33.0", True),
    (Name("medusa", until="0.32.0"), "0.32.0+cpu", True), (Name("x"), "not a version", None),
])
def test_version_gates(gate, version, accepted):
    assert gate.accepted_in(version) is accepted


@pytest.mark.parametrize("config, tensors, family, trainer", [
    (SPECFORGE_DFLASH, {"fc.weight": ("BF16", (4096, 20480)), "layers.0.self_attn.q_proj.weight": ("BF16", (4096, 4096))},
     "dflash", "z-lab-dflash"),
    (SPECFORGE_DSPARK, {"fc.weight": ("BF16", (4096, 20480)), "markov_head.proj.weight": ("BF16", (256, 4096))},
     "dspark", "specforge"),
    (SPECFORGE_PEAGLE, {"fc.weight": ("BF16", (4096, 12288)), "mask_hidden": ("BF16", (1, 12288))}, "peagle", "specforge"),
    (SPECULATORS_DFLASH, {}, "dflash", "speculators"),
    (SPECULATORS_DSPARK, {}, "dspark", "speculators"),
    (SPECULATORS_PEAGLE, {}, "peagle", "speculators"),
    (DEEPSEEK_V3, {"model.layers.61.eh_proj.weight": ("BF16", (7168, 14336))}, "mtp", "target-checkpoint"),
    ({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "vocab_size": 128256},  # SafeAILab EAGLE-1
     {"fc.weight": ("F16", (4096, 8192)), "layers.0.mlp.up_proj.weight": ("F16", (14336, 4096))}, "eagle", "safeailab-eagle"),
])
def test_a_drafter_is_recognised_from_its_trainers_keys(config, tensors, family, trainer):
    found = recognise_drafter(config, tensors)
    assert isinstance(found, Recognition), found
    assert (found.family, found.trainer, found.certain) == (family, trainer, True)


def test_a_plain_causal_lm_is_a_draft_model_only_weakly():
    found = recognise_drafter(QWEN3_06B, {"lm_head.weight": ("BF16", (151936, 1024)), "model.embed_tokens.weight": ("BF16", (151936, 1024))})
    assert isinstance(found, Recognition) and found.family == "draft_model" and found.certain is False


def test_a_whole_causal_lm_is_a_draft_model_certainly():
    """Issue 40: its own embedding and decoder layers, nothing of a head fed a target's hidden states (fc, d2t/t2d):
    what else can a whole causal LM given as the drafter be run as? It was checked as EAGLE-3 ("does not work")."""
    layer = {f"model.layers.{i}.self_attn.q_proj.weight": ("BF16", (1024, 1024)) for i in range(2)}
    whole = {"lm_head.weight": ("BF16", (151936, 1024)), "model.embed_tokens.weight": ("BF16", (151936, 1024)), **layer}
    found = recognise_drafter(QWEN3_06B, whole)
    assert isinstance(found, Recognition) and (found.family, found.certain) == ("draft_model", True)
    assert "2 decoder layers" in found.evidence
    head = recognise_drafter(QWEN3_06B, {**whole, "fc.weight": ("BF16", (1024, 3072))})  # an EAGLE head saved whole
    assert not (isinstance(head, Recognition) and head.family == "draft_model" and head.certain)


def test_an_unrecognised_drafter_says_which_keys_were_read():
    found = recognise_drafter({"architectures": ["MysteryHead"], "model_type": "mystery"}, {"w": ("F32", (2, 2))})
    assert isinstance(found, Unrecognised)
    assert "dflash_config" in found.keys_read and "speculators_model_type" in found.keys_read
    assert found.seen == "architectures ['MysteryHead'], model_type 'mystery'"


def test_layer_id_keys_say_what_the_trainer_trained_on():
    key = next(k for k in get_method("dflash").layer_ids if k.key == "dflash_config.target_layer_ids")
    assert key.convention == OUTPUT_OF and key.capture_before(SPECFORGE_DFLASH) == [2, 10, 18, 26, 34]
    speculators = next(k for k in get_method("dflash").layer_ids if k.key == "aux_hidden_state_layer_ids")
    assert speculators.capture_before(SPECULATORS_DFLASH) == [2, 18, 33]


def test_the_dspark_block_rule_names_each_trainers_layout():
    block = get_method("dspark").block
    assert block is not None and block.anchor_key == "sample_from_anchor" and block.native is True
    assert block.trainers == {"deepspec": True, "specforge": False, "speculators": False}


def test_mtp_heads_say_which_layer_holds_them():
    from compat.methods.mtp import heads

    assert heads(DEEPSEEK_V3, {"model.layers.61.eh_proj.weight": ("BF16", (1, 1))}).startswith("model.layers.61 (DeepSeek-style")
    assert "missing ['model.layers.61']" in heads(DEEPSEEK_V3, {"model.layers.0.mlp.up_proj.weight": ("BF16", (1, 1))})
    assert heads({"mtp_num_hidden_layers": 1}, {"mtp.fc.weight": ("BF16", (1, 1))}) == "mtp.* (Qwen3-Next / Qwen3.5): 1 tensor"
