"""The vLLM `speculators_carried` probe: every top-level key of a speculators config the release's updaters copy
into the drafter's config, keyed TYPE.KEY with where it is copied (the real tables of 0.18-0.34 are in
tests/matrix/test_speculators_translation_matrix.py)."""

from compat.probes.vllm.speculators_carried import speculators_carried
from probe_trees import write_tree

ALGOS = '''
@register_speculator("eagle3")
def update_eagle3(config_dict, pre_trained_config):
    pre_trained_config["draft_vocab_size"] = config_dict.get("draft_vocab_size")
    pre_trained_config["norm_before_residual"] = config_dict.get("norm_before_residual", True)
    if config_dict.get("eagle_aux_hidden_state_layer_ids"):
        pre_trained_config["eagle_aux_hidden_state_layer_ids"] = config_dict["eagle_aux_hidden_state_layer_ids"]
    pre_trained_config["architectures"] = ["Eagle3LlamaForCausalLM"]


@register_speculator("dflash")
def update_dflash(config_dict, pre_trained_config):
    pre_trained_config["block_size"] = config_dict.get("block_size", 16)
'''


def test_each_key_the_updaters_copy(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/transformers_utils/configs/speculators/algos.py": ALGOS},
                      strip_first_newline=True)
    fact = speculators_carried(tree)
    assert sorted(fact) == ["dflash.block_size", "eagle3.draft_vocab_size", "eagle3.eagle_aux_hidden_state_layer_ids",
                            "eagle3.norm_before_residual"]
    assert fact["eagle3.norm_before_residual"]["default"] is True and fact["eagle3.norm_before_residual"]["when"] == "always"
    assert fact["eagle3.eagle_aux_hidden_state_layer_ids"]["when"] == "truthy"
    assert fact["eagle3.draft_vocab_size"]["location"] == "vllm/transformers_utils/configs/speculators/algos.py:3"
    assert "eagle3.architectures" not in fact  # the class name is the translation's, not a copied key


def test_no_reader_nothing_carried(tmp_path):
    assert speculators_carried(write_tree(tmp_path, "vllm", {"vllm/x.py": "pass\n"})) == {}
