"""The vLLM `speculators_format` probe: the config parser's routing, the registered speculators types, the
EAGLE-3 updater (fields copied, the architecture constant or map), the required keys; and `translate`,
its replay on a drafter config (what doctor judges instead of the class name Eagle3Speculator)."""

from compat.probes.vllm.speculators_format import speculators_format, translate
from compat.probes.sglang.speculators_format import speculators_format as sglang_speculators_format
from probe_trees import line, write_tree

PARSER = '''
def parse(config_dict):
    model_type = config_dict.get("model_type")
    if model_type is None:
        model_type = (
            "speculators" if config_dict.get("speculators_config") is not None else model_type  # marker: route
        )
    return model_type


def maybe_override_with_speculators(model, tokenizer):
    return model, tokenizer
'''

BASE = '''
class SpeculatorsConfig(PretrainedConfig):
    model_type = "speculators"

    @classmethod
    def extract(cls, config_dict):
        pre_trained_config = config_dict.get("transformer_layer_config", {})
        return pre_trained_config

    @classmethod
    def validate_speculators_config(cls, config_dict):
        try:
            spec_config = config_dict["speculators_config"]
            methods = spec_config["proposal_methods"]
            first_method = methods[0]
            _ = first_method["speculative_tokens"]
            _ = spec_config["verifier"]["name_or_path"]
        except (KeyError, IndexError, TypeError) as e:
            raise ValueError("Invalid speculators config structure") from e
        if "transformer_layer_config" not in config_dict:
            raise ValueError("Must provide transformer_layer_config")
'''

ALGOS_CONSTANT = '''
SUPPORTED_SPECULATORS_TYPES = {}


@register_speculator("eagle3")
def update_eagle3(config_dict, vllm_config):
    vllm_config["draft_vocab_size"] = config_dict.get("draft_vocab_size")
    if config_dict.get("target_hidden_size") is not None:
        vllm_config["target_hidden_size"] = config_dict["target_hidden_size"]
    vllm_config["norm_before_residual"] = config_dict.get("norm_before_residual", True)
    vllm_config["architectures"] = ["Eagle3LlamaForCausalLM"]  # marker: arch
'''

ALGOS_MAP = '''
@register_speculator("eagle3")
def update_eagle3(config_dict, pre_trained_config):
    pre_trained_config["draft_vocab_size"] = config_dict.get("draft_vocab_size")
    eagle3_arch_map = {"qwen3": "Eagle3Qwen3ForCausalLM", "llama": "Eagle3LlamaForCausalLM"}
    model_type = pre_trained_config.get("model_type", "llama")
    if model_type not in eagle3_arch_map:
        raise ValueError(model_type)
    pre_trained_config["architectures"] = [eagle3_arch_map[model_type]]  # marker: arch
    if config_dict.get("eagle_aux_hidden_state_layer_ids"):
        pre_trained_config["eagle_aux_hidden_state_layer_ids"] = config_dict["eagle_aux_hidden_state_layer_ids"]


@register_speculator("dflash")
def update_dflash(config_dict, pre_trained_config):
    pre_trained_config["architectures"] = ["DFlashDraftModel"]
'''

HOME = "vllm/transformers_utils/configs/speculators"


def _tree(tmp_path, algos):
    return write_tree(tmp_path, "vllm", {
        "vllm/transformers_utils/config.py": PARSER,
        f"{HOME}/base.py": BASE,
        f"{HOME}/algos.py": algos,
    }, strip_first_newline=True)


def speculators(**over):
    config = {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
              "transformer_layer_config": {"model_type": "llama", "hidden_size": 64, "vocab_size": 256},
              "draft_vocab_size": 128, "norm_before_residual": False, "eagle_aux_hidden_state_layer_ids": [1, 3, 6],
              "speculators_config": {"algorithm": "eagle3", "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                                     "default_proposal_method": "greedy", "verifier": {"name_or_path": "t", "architectures": []}}}
    config.update(over)
    return config


def test_a_release_without_the_reader_says_so(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/transformers_utils/config.py": "X = 1\n"})
    fact = speculators_format(tree)
    assert fact["present"] is False and "no SpeculatorsConfig" in fact["reason"]
    refused = translate(fact, speculators())
    assert refused.config is None and "no speculators-format reader" in refused.error
    assert translate(fact, {"architectures": ["LlamaForCausalLMEagle3"]}) is None  # not a speculators config


def test_constant_architecture_and_copies(tmp_path):
    fact = speculators_format(_tree(tmp_path, ALGOS_CONSTANT))
    assert fact["present"] is True
    assert fact["routing"] == {"location": f"vllm/transformers_utils/config.py:{line(PARSER, 'marker: route')}",
                               "when": "config.json has a speculators_config and no model_type", "needs_no_model_type": True}
    assert fact["eagle3"]["architecture"] == {"value": "Eagle3LlamaForCausalLM",
                                              "location": f"{HOME}/algos.py:{line(ALGOS_CONSTANT, 'marker: arch')}"}
    copies = {c["key"]: (c["from"], c["default"], c["when"]) for c in fact["eagle3"]["copies"]}
    assert copies == {"draft_vocab_size": ("draft_vocab_size", None, "always"),
                      "target_hidden_size": ("target_hidden_size", None, "not None"),
                      "norm_before_residual": ("norm_before_residual", True, "always")}
    assert [r["path"] for r in fact["requires"]] == [
        "speculators_config.proposal_methods[0].speculative_tokens", "speculators_config.verifier.name_or_path",
        "transformer_layer_config"]
    assert fact["serves_as_model"]["function"] == "maybe_override_with_speculators"
    built = translate(fact, speculators()).config
    assert built["architectures"] == ["Eagle3LlamaForCausalLM"] and built["hidden_size"] == 64
    assert "eagle_aux_hidden_state_layer_ids" not in built  # this release does not pass the ids on
    missing = speculators()
    del missing["norm_before_residual"]
    assert translate(fact, missing).config["norm_before_residual"] is True  # vLLM's default, not speculators' False


def test_architecture_by_layer_model_type(tmp_path):
    fact = speculators_format(_tree(tmp_path, ALGOS_MAP))
    arch = fact["eagle3"]["architecture"]
    assert arch["by"] == "transformer_layer_config.model_type" and arch["default"] == "llama"
    assert arch["map"] == {"qwen3": "Eagle3Qwen3ForCausalLM", "llama": "Eagle3LlamaForCausalLM"}
    assert sorted(fact["types"]) == ["dflash", "eagle3"]
    qwen = speculators(transformer_layer_config={"model_type": "qwen3", "hidden_size": 64})
    assert translate(fact, qwen).config["architectures"] == ["Eagle3Qwen3ForCausalLM"]
    assert translate(fact, speculators()).config["eagle_aux_hidden_state_layer_ids"] == [1, 3, 6]
    refused = translate(fact, speculators(transformer_layer_config={"model_type": "mistral"}))
    assert refused.config is None and "'mistral' has no EAGLE-3 drafter" in refused.error
    assert refused.location == f"{HOME}/algos.py:{line(ALGOS_MAP, 'marker: arch')}"


def test_what_the_parser_does_not_route(tmp_path):
    fact = speculators_format(_tree(tmp_path, ALGOS_MAP))
    with_type = translate(fact, speculators(model_type="llama"))
    assert with_type.config is None and "model_type 'llama'" in with_type.error
    unknown = translate(fact, speculators(speculators_model_type="medusa"))
    assert "'medusa' is not one this release reads (eagle3, dflash)" in unknown.error
    no_tokens = speculators()
    no_tokens["speculators_config"] = {"proposal_methods": [], "verifier": {"name_or_path": "t"}}
    assert "speculators_config.proposal_methods[0].speculative_tokens" in translate(fact, no_tokens).error


def test_sglang_has_no_speculators_reader(tmp_path):
    tree = write_tree(tmp_path, "sglang", {"sglang/srt/utils/hf_transformers/config.py": "def get_config(model):\n    return model\n"})
    fact = sglang_speculators_format(tree)
    assert fact["present"] is False and fact["loader"]["location"] == "sglang/srt/utils/hf_transformers/config.py:1"
    reads = write_tree(tmp_path / "b", "sglang", {"sglang/srt/configs/spec.py": 'KEY = "speculators_config"\n'})
    assert sglang_speculators_format(reads)["readers"] == [{"key": "speculators_config", "location": "sglang/srt/configs/spec.py:1"}]
