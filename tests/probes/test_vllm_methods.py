"""The vLLM `methods` probe on trees in both shapes vLLM has run its methods in (names as the releases write them):
the V1 runner's proposer chain (0.20-0.33) and 0.34.0's config classes; the MTP rewrite, the suffix package, the
speculators types with their id maps, the DSpark block keys. Real releases: tests/matrix/test_methods_matrix.py."""

from compat.probes.vllm.methods import speculative_methods
from probe_trees import write_tree

SPECULATIVE = '''
from typing import Literal, get_args

from vllm.utils.import_utils import has_arctic_inference

MTPModelTypes = Literal["deepseek_mtp", "mtp"]
EagleModelTypes = Literal["eagle", "eagle3", MTPModelTypes, "dflash"]
SpeculativeMethod = Literal["ngram", "draft_model", "suffix", EagleModelTypes, "dspark"]


class SpeculativeConfig:
    method: SpeculativeMethod | None = None

    def __post_init__(self):
        if self.method in get_args(MTPModelTypes) and self.method != "mtp":
            self.method = "mtp"
        elif self.method == "suffix":
            self._validate_suffix_decoding()

    def _validate_suffix_decoding(self):
        if not has_arctic_inference():
            raise ImportError("Arctic Inference is required for suffix decoding. "
                              "Install via `pip install arctic-inference==0.1.1`.")

    def use_eagle(self) -> bool:
        return self.method in ("eagle", "eagle3", "mtp", "dflash", "dspark")

    def use_dflash(self) -> bool:
        return self.method == "dflash"
'''

IMPORT_UTILS = '''
def _has_module(name):
    return True


def has_arctic_inference() -> bool:
    return _has_module("arctic_inference")
'''

RUNNER = '''
class GPUModelRunner:
    def __init__(self):
        if self.speculative_config:
            if self.speculative_config.method == "ngram":
                self.drafter = NgramProposer(self.vllm_config)
            elif self.speculative_config.use_dflash():
                self.drafter = DFlashProposer(self.vllm_config, self.device, self)
                self.use_aux_hidden_state_outputs = True
            elif self.speculative_config.method == "suffix":
                self.drafter = SuffixDecodingProposer(self.vllm_config)
            elif self.speculative_config.use_eagle():
                self.drafter = EagleProposer(self.vllm_config, self.device, self)
                if self.speculative_config.method == "eagle3":
                    self.use_aux_hidden_state_outputs = self.drafter.eagle3_use_aux_hidden_state
'''

ALGOS = '''
@register_speculator("peagle")
def update_peagle(config_dict: dict, pre_trained_config: dict) -> None:
    raise ValueError("P-EAGLE (parallel drafting EAGLE-3) is not supported.")


@register_speculator("dflash")
def update_dflash(config_dict: dict, pre_trained_config: dict) -> None:
    pre_trained_config["architectures"] = ["DFlashDraftModel"]
    aux_layer_ids = config_dict["aux_hidden_state_layer_ids"]
    pre_trained_config["eagle_aux_hidden_state_layer_ids"] = aux_layer_ids
    # DFlash configs use different indexing for the target layers, see #40727
    pre_trained_config["dflash_config"] = {
        "mask_token_id": config_dict["mask_token_id"],
        "target_layer_ids": [i - 1 for i in aux_layer_ids],
    }
'''

DSPARK_SPECULATOR = '''
class DSparkSpeculator:
    def __init__(self, vllm_config, device):
        self.sample_from_anchor = not getattr(self.draft_model_config.hf_config, "dspark_bonus_anchor", False)
'''


def _tree(tmp_path):
    return write_tree(tmp_path, "vllm", {
        "vllm/config/speculative.py": SPECULATIVE, "vllm/utils/import_utils.py": IMPORT_UTILS,
        "vllm/v1/worker/gpu_model_runner.py": RUNNER,
        "vllm/transformers_utils/configs/speculators/algos.py": ALGOS,
        "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py": DSPARK_SPECULATOR,
    })


def test_names_with_their_literal_and_the_runner_chain(tmp_path):
    fact = speculative_methods(_tree(tmp_path))
    names = {n["name"]: n["group"] for n in fact["names"]}
    assert names == {"ngram": "SpeculativeMethod", "draft_model": "SpeculativeMethod", "suffix": "SpeculativeMethod",
                     "eagle": "EagleModelTypes", "eagle3": "EagleModelTypes", "deepseek_mtp": "MTPModelTypes",
                     "mtp": "MTPModelTypes", "dflash": "EagleModelTypes", "dspark": "SpeculativeMethod"}
    per = fact["methods"]
    assert fact["runs_by"] == "the V1 model runner's proposer chain"
    assert per["deepseek_mtp"]["runs_as"] == "mtp"
    assert per["dflash"]["runner_branch"]["proposer"] == "DFlashProposer" and per["dflash"]["aux_hidden_states"] is True
    assert per["eagle3"]["aux_hidden_states"] is True and per["eagle"]["aux_hidden_states"] is False  # only eagle3's nested if
    assert per["suffix"]["venv"]["module"] == "arctic_inference"
    assert per["suffix"]["venv"]["install"] == "pip install arctic-inference==0.1.1"
    assert "venv" not in per["dflash"]
    assert per["draft_model"] == {}  # no proposer branch for it in this runner


def test_speculators_types_raise_and_map_ids(tmp_path):
    types = speculative_methods(_tree(tmp_path))["speculators_types"]
    assert types["peagle"]["raises"] == "ValueError('P-EAGLE (parallel drafting EAGLE-3) is not supported.')"
    maps = {(m["from"], m["writes"], m["offset"]) for m in types["dflash"]["layer_ids"]}
    assert maps == {("aux_hidden_state_layer_ids", "eagle_aux_hidden_state_layer_ids", 0),
                    ("aux_hidden_state_layer_ids", "dflash_config.target_layer_ids", -1)}
    assert types["dflash"]["raises"] is None and types["dflash"]["architectures"] == ["DFlashDraftModel"]


def test_the_dspark_block_key_and_its_negation(tmp_path):
    block = speculative_methods(_tree(tmp_path))["methods"]["dspark"]["block"]
    (read,) = block["reads"]
    assert read["key"] == "dspark_bonus_anchor" and read["negated"] is True and read["default"] is False
