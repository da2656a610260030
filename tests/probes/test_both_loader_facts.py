"""The weights_check and method_packages probes of both engines on small trees: the loader's check of what was
loaded (vLLM's DefaultModelLoader, only for unquantized models), and the packages a method imports beyond the engine's
own dependencies (suffix decoding's arctic_inference: a `has_x()` check that raises, and a lazy import)."""

from compat.probes.method_packages import install_line
from compat.probes.sglang.method_packages import method_packages as sglang_packages
from compat.probes.sglang.weights_check import weights_check as sglang_weights_check
from compat.probes.vllm.method_packages import method_packages as vllm_packages
from compat.probes.vllm.weights_check import weights_check as vllm_weights_check
from probe_trees import line, write_tree

DEFAULT_LOADER = '''
class DefaultModelLoader:
    def load_weights(self, model, model_config):
        weights_to_load = {name for name, _ in model.named_parameters()}
        loaded_weights = model.load_weights(self.get_all_weights(model_config, model))
        if model_config.quantization is None and loaded_weights is not None:
            weights_not_loaded = weights_to_load - loaded_weights
            if weights_not_loaded:
                raise ValueError(f"Following weights were not initialized from checkpoint: {weights_not_loaded}")  # marker
'''


def test_vllm_refuses_parameters_never_loaded_for_unquantized_models(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/model_executor/model_loader/default_loader.py": DEFAULT_LOADER},
                      strip_first_newline=True)
    fact = vllm_weights_check(tree)
    assert fact["present"] and fact["only_unquantized"] and fact["needs_returned_names"]
    assert fact["location"] == f"vllm/model_executor/model_loader/default_loader.py:{line(DEFAULT_LOADER, 'marker')}"
    assert fact["message"] == "Following weights were not initialized from checkpoint: {weights_not_loaded}"


def test_a_loader_without_the_check(tmp_path):
    tree = write_tree(tmp_path, "sglang", {"sglang/srt/model_loader/loader.py": "def load(model):\n    model.named_parameters()\n"})
    assert sglang_weights_check(tree)["present"] is False


CONFIG = '''
from typing import Literal
from vllm.utils.import_utils import has_arctic_inference

SpeculativeMethod = Literal["ngram", "suffix", "medusa"]


class SpeculativeConfig:
    method: SpeculativeMethod | None = None

    def __post_init__(self):
        if self.method == "suffix":
            self._validate_suffix_decoding()

    def _validate_suffix_decoding(self):
        if not has_arctic_inference():  # marker: check
            raise ImportError("Arctic Inference is required for suffix decoding. "
                              "Install via `pip install arctic-inference==0.1.1`.")
'''
IMPORT_UTILS = '''
def _has_module(name):
    return True


def has_arctic_inference() -> bool:
    return _has_module("arctic_inference")
'''
RUNNER = '''
from vllm.v1.spec_decode.suffix_decoding import SuffixDecodingProposer
from vllm.v1.spec_decode.ngram_proposer import NgramProposer


class GPUModelRunner:
    def __init__(self):
        if self.speculative_config.method == "ngram":
            self.drafter = NgramProposer(self.vllm_config)
        elif self.speculative_config.method == "suffix":
            self.drafter = SuffixDecodingProposer(self.vllm_config)
        elif self.speculative_config.method == "medusa":
            self.drafter = MedusaProposer(self.vllm_config)
'''
SUFFIX = '''
class SuffixDecodingProposer:
    def __init__(self, vllm_config):
        from arctic_inference.suffix_decoding import SuffixDecodingCache  # marker: import
        self.cache = SuffixDecodingCache()
'''
NGRAM = '''
import numpy as np


class NgramProposer:
    def __init__(self, vllm_config):
        import numpy
        if vllm_config.use_npu:
            import torch_npu
'''


def test_vllm_suffix_needs_arctic_inference_read_two_ways(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/config/speculative.py": CONFIG, "vllm/utils/import_utils.py": IMPORT_UTILS,
                                         "vllm/v1/worker/gpu_model_runner.py": RUNNER,
                                         "vllm/v1/spec_decode/suffix_decoding.py": SUFFIX,
                                         "vllm/v1/spec_decode/ngram_proposer.py": NGRAM}, strip_first_newline=True)
    fact = vllm_packages(tree)
    (need,) = fact["methods"]["suffix"]
    assert need["module"] == "arctic_inference" and need["distribution"] == "arctic-inference" and need["requires"] == "==0.1.1"
    assert need["location"] == f"vllm/config/speculative.py:{line(CONFIG, 'marker: check')}"
    assert need["also"] == [{"how": "imported in __init__()",
                             "location": f"vllm/v1/spec_decode/suffix_decoding.py:{line(SUFFIX, 'marker: import')}"}]
    assert "ngram" not in fact["methods"]  # numpy is imported at module level (a dependency); torch_npu under an `if`


def test_sglang_workers_read_and_a_raising_import_error_is_a_requirement(tmp_path):
    worker = ('try:\n    import fancy_kernels\nexcept ImportError:\n    raise ImportError("pip install fancy-kernels>=2")\n'
              'try:\n    import optional_speedup\nexcept ImportError:\n    optional_speedup = None\n')
    tree = write_tree(tmp_path, "sglang", {"sglang/srt/speculative/ngram_worker.py": worker,
                                           "sglang/srt/speculative/eagle_worker.py": "import torch\n"})
    fact = sglang_packages(tree)
    (need,) = fact["workers"]["sglang/srt/speculative/ngram_worker.py"]
    assert need["module"] == "fancy_kernels" and need["requires"] == ">=2" and need["distribution"] == "fancy-kernels"
    assert fact["workers"]["sglang/srt/speculative/eagle_worker.py"] == []


def test_install_lines():
    assert install_line("Install via `pip install arctic-inference==0.1.1`.")["requires"] == "==0.1.1"
    assert install_line("no hint here") == {}
