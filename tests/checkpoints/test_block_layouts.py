"""The block drafter layouts (checkpoints/blocks/): each recognises its trainer's real config keys, and only those."""

import pytest

from compat.checkpoints.blocks import block_layouts, detect_block_layout

SPECFORGE_DFLASH = {"architectures": ["DFlashDraftModel"], "auto_map": {"AutoModel": "dflash.DFlashDraftModel"},
                    "block_size": 16, "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 33]}}
SPECFORGE_DSPARK = {"architectures": ["DSparkDraftModel"], "block_size": 7,
                    "dflash_config": {"projector_type": "dspark", "markov_rank": 256, "enable_confidence_head": True,
                                      "confidence_head_alpha": 1.0, "target_layer_ids": [1, 9, 17, 25, 33]}}
MODELOPT_DSPARK = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "block_size": 8,  # hf_spec_export.py:510
                   "dflash_config": {"mask_token_id": 1, "target_layer_ids": [1, 17, 33], "projector_type": "dspark",
                                     "shift_label": True, "markov_rank": 256, "markov_head_type": "vanilla",
                                     "use_confidence_head": False}}
DEEPSPEC = {"architectures": ["Qwen3DSparkModel"], "target_layer_ids": [1, 9, 17, 25, 33], "block_size": 7}
SPECULATORS = {"speculators_model_type": "dspark", "architectures": ["DSparkSpeculator"], "aux_hidden_state_layer_ids": [2, 18, 33]}
PEAGLE = {"architectures": ["PEagleDraftModel"], "model_type": "llama"}
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61, "num_nextn_predict_layers": 1}


@pytest.mark.parametrize("config, name", [
    (SPECFORGE_DFLASH, "specforge-dflash"), (SPECFORGE_DSPARK, "specforge-dspark"), (MODELOPT_DSPARK, "modelopt-dspark"),
    (DEEPSPEC, "deepspec-dspark"), (SPECULATORS, "speculators-block"), (PEAGLE, "specforge-peagle"),
    (DEEPSEEK_V3, "mtp-heads"),
])
def test_each_trainers_config_is_its_layout(config, name):
    found = detect_block_layout(config, set())
    assert found is not None and found.NAME == name


def test_an_eagle3_drafter_is_none_of_them():
    assert detect_block_layout({"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama"}, {"fc.weight"}) is None


def test_every_layout_names_its_family_and_the_trainers_code():
    from compat.methods import TRAINERS, families

    for layout in block_layouts():
        assert layout.FAMILY in families() and layout.TRAINER in TRAINERS and ".py" in layout.SOURCE or ".json" in layout.SOURCE
