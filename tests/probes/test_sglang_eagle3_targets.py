"""SGLang EAGLE-3 targets, drafters and aux layer ids, on small trees the tests write."""

from __future__ import annotations

import pytest

from compat.probes.sglang.aux_layer_ids import aux_layer_ids
from compat.probes.sglang.eagle3_drafters import eagle3_drafter_classes, eagle3_drafters
from compat.probes.sglang.eagle3_targets import eagle3_targets_probe
from compat.probes.sglang.eagle3_whitelist import eagle3_whitelist
from compat.report import build_report
from compat.core.tree import UnparseableFile

import probe_trees


def write_tree(root, files: dict[str, str]):
    """A fake release: sglang/__init__.py plus the given files (relative to root)."""
    return probe_trees.write_tree(root, "sglang", files, strip_first_newline=True)


line = probe_trees.line


# Shaped like the real files: the capture method on the *ForCausalLM class, EntryClass at the bottom.
TOY_LLAMA = '''
class ToyModel:
    def __init__(self):
        self.layers_to_capture = []

    def forward(self, hidden_states, residual):
        aux_hidden_states = []
        for i in range(len(self.layers)):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = self.layers[i](hidden_states, residual)
        return hidden_states, aux_hidden_states


class ToyLlamaForCausalLM:
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]


class ToyPhiForCausalLM(ToyLlamaForCausalLM):
    pass


EntryClass = [ToyLlamaForCausalLM, ToyPhiForCausalLM]
'''

TOY_MLA = '''
class ToyMlaForCausalLM:
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        if layer_ids is None:
            n = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, n // 2, n - 3]
        else:
            if layer_ids and layer_ids[0] == 1:
                self.model.layers_to_capture = [val + 1 for val in layer_ids]
            else:
                self.model.layers_to_capture = list(layer_ids)


EntryClass = ToyMlaForCausalLM
'''

# in another file: a subclass that inherits the method, registered there
TOY_MLA_V3 = '''
from sglang.srt.models.toy_mla import ToyMlaForCausalLM


class ToyMlaV3ForCausalLM(ToyMlaForCausalLM):
    pass


EntryClass = [ToyMlaV3ForCausalLM]
'''

TOY_VLM = '''
from sglang.srt.models.toy_mla_v3 import ToyMlaV3ForCausalLM


class ToyVlmForConditionalGeneration:
    def __init__(self, config):
        self.language_model = ToyMlaV3ForCausalLM(config.text_config)

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        if not hasattr(self.language_model, "set_eagle3_layers_to_capture"):
            raise AttributeError("language_model does not support EAGLE3 speculative decoding.")
        self.language_model.set_eagle3_layers_to_capture(layer_ids)


EntryClass = [ToyVlmForConditionalGeneration]
'''

TOY_DRAFTER = '''
from sglang.srt.models.toy_llama import ToyLlamaForCausalLM


class ToyLlamaForCausalLMEagle3(ToyLlamaForCausalLM):
    def __init__(self, config):
        if config.num_hidden_layers != 1:
            raise ValueError("EAGLE3 currently only supports 1 layer")


EntryClass = [ToyLlamaForCausalLMEagle3]
'''

TOY_UNREGISTERED = '''
class ToyNoHookForCausalLM:
    def forward(self):
        return None


EntryClass = ToyNoHookForCausalLM
'''

MODELS = {
    "sglang/srt/models/toy_llama.py": TOY_LLAMA,
    "sglang/srt/models/toy_mla.py": TOY_MLA,
    "sglang/srt/models/toy_mla_v3.py": TOY_MLA_V3,
    "sglang/srt/models/toy_vlm.py": TOY_VLM,
    "sglang/srt/models/toy_llama_eagle3.py": TOY_DRAFTER,
    "sglang/srt/models/toy_nohook.py": TOY_UNREGISTERED,
}


@pytest.fixture
def models_tree(tmp_path):
    return write_tree(tmp_path, MODELS)


def by_class(tree):
    return {t["class"]: t for t in eagle3_targets_probe(tree)}


def test_unconditional_offset_and_inherited_in_same_file(models_tree):
    targets = by_class(models_tree)
    llama = targets["ToyLlamaForCausalLM"]
    assert llama["layer_id_offset"] == 1
    assert llama["architectures"] == ["ToyLlamaForCausalLM"]
    assert llama["default"] == "[2, N // 2, N - 3]"
    assert llama["location"] == f"sglang/srt/models/toy_llama.py:{line(TOY_LLAMA, 'class ToyLlamaForCausalLM')}"
    assert llama["method_location"] == f"sglang/srt/models/toy_llama.py:{line(TOY_LLAMA, 'def set_eagle3')}"
    phi = targets["ToyPhiForCausalLM"]
    assert phi["inherited_from"] == "ToyLlamaForCausalLM" and phi["layer_id_offset"] == 1
    assert "ToyNoHookForCausalLM" not in targets


def test_conditional_offset_and_inheritance_across_files(models_tree):
    targets = by_class(models_tree)
    expected = {"offset": 1, "when": "layer_ids[0] == 1", "otherwise": 0}
    assert targets["ToyMlaForCausalLM"]["layer_id_offset"] == expected
    v3 = targets["ToyMlaV3ForCausalLM"]
    assert v3["layer_id_offset"] == expected
    assert v3["inherited_from"] == "ToyMlaForCausalLM"
    assert v3["location"] == f"sglang/srt/models/toy_mla_v3.py:{line(TOY_MLA_V3, 'class ToyMlaV3')}"
    assert v3["method_location"].startswith("sglang/srt/models/toy_mla.py:")


def test_delegation_to_language_model(models_tree):
    vlm = by_class(models_tree)["ToyVlmForConditionalGeneration"]
    assert vlm["layer_id_offset"] == "delegates"
    assert vlm["delegates_to"] == {
        "attribute": "language_model",
        "class": "ToyMlaV3ForCausalLM",
        "layer_id_offset": {"offset": 1, "when": "layer_ids[0] == 1", "otherwise": 0},
    }


def test_drafters_and_guards(models_tree):
    assert eagle3_drafters(models_tree) == ["ToyLlamaForCausalLMEagle3"]
    (drafter,) = eagle3_drafter_classes(models_tree)
    assert drafter["bases"] == ["ToyLlamaForCausalLM"]
    assert drafter["registered_at"] == f"sglang/srt/models/toy_llama_eagle3.py:{line(TOY_DRAFTER, 'EntryClass')}"
    wl = eagle3_whitelist(models_tree)
    assert wl["present"] is False
    kinds = {g["kind"]: g for g in wl["guards"]}
    assert kinds["capability"]["location"] == f"sglang/srt/models/toy_vlm.py:{line(TOY_VLM, 'raise AttributeError')}"
    assert kinds["drafter_config"]["error"] == "EAGLE3 currently only supports 1 layer"


def test_method_without_ids_means_defaults_only(tmp_path):
    tree = write_tree(tmp_path, {"sglang/srt/models/old.py": '''
        class OldForCausalLM:
            def set_eagle3_layers_to_capture(self):
                n = self.config.num_hidden_layers
                self.model.layers_to_capture = [2, n // 2, n - 3]


        EntryClass = OldForCausalLM
    '''})
    (old,) = eagle3_targets_probe(tree)
    assert old["accepts_layer_ids"] is False and old["layer_id_offset"] is None


def test_missing_models_folder(tmp_path):
    tree = write_tree(tmp_path, {"sglang/srt/server_args.py": "X = 1\n"})
    assert eagle3_targets_probe(tree) == []
    assert eagle3_drafters(tree) == []
    assert aux_layer_ids(tree)["present"] is False


def test_unparseable_model_file(tmp_path):
    bad = TOY_LLAMA.replace(
        "    def set_eagle3_layers_to_capture(self, layer_ids=None):",
        "    def set_eagle3_layers_to_capture[T](self, layer_ids: T = None):",  # PEP 695: not Python 3.11
    )
    tree = write_tree(tmp_path, {"sglang/srt/models/toy_llama.py": bad})
    with pytest.raises(UnparseableFile, match=r"^sglang/srt/models/toy_llama.py:\d+: cannot parse with this Python") as err:
        eagle3_targets_probe(tree)
    assert err.value.relpath == "sglang/srt/models/toy_llama.py"
    report = build_report(write_tree(tmp_path, {}))  # same tree, through the report
    assert report["eagle3_targets"]["present"] is False
    assert "toy_llama.py" in report["eagle3_targets"]["error"]


# -- aux layer ids ---------------------------------------------------------------------------
RUNNER_READS_IDS = '''
class ModelRunner:
    def __init__(self, draft_model_config):
        try:
            eagle_config = getattr(draft_model_config.hf_config, "eagle_config", None)
            self.eagle_aux_hidden_state_layer_ids = eagle_config["eagle_aux_hidden_state_layer_ids"]
        except Exception:
            self.eagle_aux_hidden_state_layer_ids = None

    def initialize(self):
        self.init_device_graphs()
        self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)
'''

GRAPH_RUNNER_DEFAULTS = '''
class CudaGraphRunner:
    def __init__(self, model_runner):
        self.model_runner = model_runner
        if model_runner.spec_algorithm.is_eagle3():
            self.model_runner.model.set_eagle3_layers_to_capture()
        self.capture()
'''


def test_aux_layer_ids_with_cuda_graph_defaults_quirk(tmp_path):
    tree = write_tree(tmp_path, {
        **MODELS,
        "sglang/srt/model_executor/model_runner.py": RUNNER_READS_IDS,
        "sglang/srt/model_executor/cuda_graph_runner.py": GRAPH_RUNNER_DEFAULTS,
    })
    aux = aux_layer_ids(tree)
    assert aux["read_from_config"] is True
    (key,) = aux["keys"]
    assert key["where"] == "eagle_config" and key["key"] == "eagle_aux_hidden_state_layer_ids"
    assert key["location"] == f"sglang/srt/model_executor/model_runner.py:{line(RUNNER_READS_IDS, 'self.eagle_aux_hidden_state_layer_ids = eagle_config')}"
    assert aux["default"] == "[2, N // 2, N - 3]"
    assert aux["cuda_graph_defaults_quirk"] is True
    assert aux["cuda_graph_defaults_location"] == (
        f"sglang/srt/model_executor/cuda_graph_runner.py:{line(GRAPH_RUNNER_DEFAULTS, 'set_eagle3_layers_to_capture()')}"
    )
    assert "+1 unconditional (ToyLlamaForCausalLM)" in aux["offset_rule"]
    assert "+1 when layer_ids[0] == 1, else +0 (ToyMlaForCausalLM)" in aux["offset_rule"]
    assert aux["capture"] == "hidden_states + residual before layer i"


def test_aux_layer_ids_fixed_order_has_no_quirk(tmp_path):
    fixed = RUNNER_READS_IDS.replace(
        "        self.init_device_graphs()\n        self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)",
        "        self.init_aux_hidden_state_capture()\n        self.init_device_graphs()\n\n"
        "    def init_aux_hidden_state_capture(self):\n"
        "        self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)",
    )
    assert fixed != RUNNER_READS_IDS
    tree = write_tree(tmp_path, {**MODELS, "sglang/srt/model_executor/model_runner.py": fixed})
    aux = aux_layer_ids(tree)
    assert aux["read_from_config"] is True
    assert aux["cuda_graph_defaults_quirk"] is False
    assert [c["function"] for c in aux["capture_calls"]] == ["init_aux_hidden_state_capture"]
