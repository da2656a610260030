"""The `aux_layer_ids` probe: keys, nesting and offsets read from fake runner functions."""


from compat.probes.vllm.aux_layer_ids import aux_layer_ids
from probe_trees import write_tree

V1 = "vllm/v1/worker/gpu_model_runner.py"
V2 = "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py"


def make_tree(tmp_path, files):
    return write_tree(tmp_path, "vllm", files)


DEFAULT_PROTOCOL = """
    class EagleModelMixin:
        def _maybe_add_hidden_state(self, aux, layer_idx, hidden_states, residual):
            if layer_idx in self.aux_hidden_state_layers:
                value = hidden_states + residual if residual is not None else hidden_states
                aux.append(value)
            return aux

    class SupportsEagle3(Protocol):
        def get_eagle3_default_aux_hidden_state_layers(self):
            layers = self.get_language_model().model.layers
            count = len(layers)
            return (2, count // 2, count - 3)
"""

V1_NESTED = """
    class GPUModelRunner:
        def load_model(self):
            pass

        def _get_eagle3_aux_layers_from_config(self):
            if not (self.speculative_config and self.speculative_config.draft_model_config):
                return None
            cfg = self.speculative_config.draft_model_config.hf_config
            layer_ids = getattr(cfg, "eagle_aux_hidden_state_layer_ids", None)
            if not layer_ids:
                dflash_config = getattr(cfg, "dflash_config", None)
                eagle_config = getattr(cfg, "eagle_config", None)
                if dflash_config and isinstance(dflash_config, dict):
                    layer_ids = [i + 1 for i in (dflash_config.get("target_layer_ids") or [])]
                if eagle_config and isinstance(eagle_config, dict):
                    layer_ids = eagle_config.get("eagle_aux_hidden_state_layer_ids")
            if layer_ids and isinstance(layer_ids, (list, tuple)):
                return tuple(layer_ids)
            return None
"""

V2_SHIFTED = """
    def get_eagle3_aux_layers_from_config(spec_config):
        hf_config = spec_config.draft_model_config.hf_config
        layer_ids = getattr(hf_config, "eagle_aux_hidden_state_layer_ids", None)
        if not layer_ids:
            spark_ids = getattr(hf_config, "dspark_target_layer_ids", None)
            if spark_ids:
                if getattr(hf_config, "model_type", None) == "deepseek_v41":
                    layer_ids = list(spark_ids)
                else:
                    layer_ids = [i + 1 for i in spark_ids]
        if not layer_ids:
            for name in ("dflash_config", "eagle_config"):
                nested = getattr(hf_config, name, None)
                if nested and isinstance(nested, dict):
                    layer_ids = nested.get("layer_ids")
        if layer_ids:
            return tuple(layer_ids)
        return None
"""


def keys_of(fact, runner):
    entry = next(r for r in fact["runners"] if r["runner"] == runner)
    return [(k["key"], k["where"], k["offset"]) for k in entry["keys"]]


def test_nested_eagle_config_and_dflash_plus_one_in_the_v1_runner(tmp_path):
    tree = make_tree(tmp_path, {V1: V1_NESTED, "vllm/model_executor/models/interfaces.py": DEFAULT_PROTOCOL})
    fact = aux_layer_ids(tree)
    assert fact["read_from_config"] is True
    assert fact["runners"][0]["location"] == f"{V1}:6"
    assert keys_of(fact, "v1") == [
        ("eagle_aux_hidden_state_layer_ids", "top-level", 0),
        ("target_layer_ids", "dflash_config", 1),
        ("eagle_aux_hidden_state_layer_ids", "eagle_config", 0),
    ]
    locations = [k["location"] for k in fact["runners"][0]["keys"]]
    assert locations == [f"{V1}:10", f"{V1}:15", f"{V1}:17"]


def test_default_and_capture_are_read_from_the_protocol(tmp_path):
    tree = make_tree(tmp_path, {V1: V1_NESTED, "vllm/model_executor/models/interfaces.py": DEFAULT_PROTOCOL})
    fact = aux_layer_ids(tree)
    assert fact["default"] == "(2, n // 2, n - 3)"
    assert fact["default_source"] == "(2, count // 2, count - 3)"
    assert fact["default_location"] == "vllm/model_executor/models/interfaces.py:13"
    assert fact["capture"] == "hidden_states + residual before layer k"


def test_v2_runner_offsets_through_a_variable_and_loop_over_nested_configs(tmp_path):
    tree = make_tree(tmp_path, {V2: V2_SHIFTED})
    fact = aux_layer_ids(tree)
    assert [r["runner"] for r in fact["runners"]] == ["v2"]
    assert keys_of(fact, "v2") == [
        ("eagle_aux_hidden_state_layer_ids", "top-level", 0),
        ("dspark_target_layer_ids", "top-level", 1),
        ("layer_ids", "dflash_config", 0),
        ("layer_ids", "eagle_config", 0),
    ]
    spark = fact["runners"][0]["keys"][1]
    assert spark["unshifted_when"] == "getattr(hf_config, 'model_type', None) == 'deepseek_v41'"


def test_before_the_reader_existed_ids_come_from_the_target_default(tmp_path):
    tree = make_tree(tmp_path, {
        V1: """
            class GPUModelRunner:
                def load_model(self):
                    if self.use_aux_hidden_state_outputs:
                        self.model.set_aux_hidden_state_layers(
                            self.model.get_eagle3_aux_hidden_state_layers())
        """,
        "vllm/model_executor/models/llama.py": """
            class LlamaModel:
                def forward(self, hidden_states, residual):
                    aux_hidden_states = []
                    for idx, layer in enumerate(self.layers):
                        if idx in self.aux_hidden_state_layers:
                            aux_hidden_states.append(hidden_states + residual)
                        hidden_states, residual = layer(hidden_states, residual)

            class LlamaForCausalLM:
                def get_eagle3_aux_hidden_state_layers(self):
                    num_layers = len(self.model.layers)
                    return (2, num_layers // 2, num_layers - 3)
        """,
    })
    fact = aux_layer_ids(tree)
    assert fact["read_from_config"] is False
    assert "default" in fact["reason"]
    assert fact["default_used_at"] == f"{V1}:6"
    assert fact["default"] == "(2, n // 2, n - 3)"
    assert fact["default_location"] == "vllm/model_executor/models/llama.py:13"
    assert fact["capture_location"] == "vllm/model_executor/models/llama.py:7"
    assert fact["runners"] == []
