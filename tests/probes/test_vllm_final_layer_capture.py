"""The vLLM `final_layer_capture` probe on fake model trees shaped like the real releases' forwards."""

from __future__ import annotations

from compat.probes.vllm.final_layer_capture import final_layer_capture
from probe_trees import line, write_tree

MODELS = "vllm/model_executor/models"

INTERFACES = """
    from typing import Protocol

    class SupportsEagle3(Protocol):
        def set_aux_hidden_state_layers(self, layers): ...

    class EagleModelMixin:
        def _maybe_add_hidden_state(self, aux_hidden_states, layer_idx, hidden_states, residual):
            if layer_idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            return aux_hidden_states
"""

REGISTRY = """
    _TEXT_GENERATION_MODELS = {
        "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
        "DeepseekV2ForCausalLM": ("deepseek_v2", "DeepseekV2ForCausalLM"),
        "DeepseekV3ForCausalLM": ("deepseek_v2", "DeepseekV3ForCausalLM"),
        "Qwen3ForCausalLM": ("qwen3", "Qwen3ForCausalLM"),
    }
"""

# vLLM <= 0.17.1 LlamaModel: the input of each layer only.
LLAMA_BEFORE = """
    class LlamaModel(nn.Module):
        def forward(self, input_ids, positions):
            aux_hidden_states = []
            for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):
                if idx in self.aux_hidden_state_layers:
                    aux_hidden_states.append(hidden_states + residual)
                hidden_states, residual = layer(positions, hidden_states, residual)
            return hidden_states, aux_hidden_states

    class LlamaForCausalLM(nn.Module, SupportsEagle3):
        def __init__(self, vllm_config):
            self.model = self._init_model(vllm_config)

        def _init_model(self, vllm_config):
            return LlamaModel(vllm_config=vllm_config)
"""

# vLLM >= 0.18.0 LlamaModel: EagleModelMixin records idx + 1 after each layer.
LLAMA_MIXIN = """
    class LlamaModel(nn.Module, EagleModelMixin):
        def forward(self, input_ids, positions):
            aux_hidden_states = self._maybe_add_hidden_state([], 0, hidden_states, residual)
            for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer):
                hidden_states, residual = layer(positions, hidden_states, residual)
                self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, residual)
            return hidden_states, aux_hidden_states

    class LlamaForCausalLM(nn.Module, SupportsEagle3):
        def __init__(self, vllm_config):
            self.model = LlamaModel(vllm_config=vllm_config)
"""

QWEN3 = """
    from .qwen2 import Qwen2Model

    class Qwen3Model(Qwen2Model):
        pass

    class Qwen3ForCausalLM(nn.Module, SupportsEagle3):
        def __init__(self, vllm_config):
            self.model = Qwen3Model(vllm_config=vllm_config)
"""
QWEN2 = """
    class Qwen2Model(nn.Module):
        def forward(self, input_ids, positions):
            for idx, layer in enumerate(self.layers[self.start_layer:self.end_layer]):
                if idx in self.aux_hidden_state_layers:
                    aux_hidden_states.append(hidden_states + residual)
                hidden_states, residual = layer(positions, hidden_states, residual)
"""


def deepseek(post_loop: bool) -> str:
    """vLLM 0.18 - 0.24 DeepseekV2Model captures before each layer; 0.25.0 adds the post-loop capture (vllm#46973)."""
    tail = """
            if self.end_layer in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
    """ if post_loop else ""
    return """
    class DeepseekV2Model(nn.Module):
        def forward(self, input_ids, positions):
            aux_hidden_states = []
            for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer):
                if idx in self.aux_hidden_state_layers:
                    aux_hidden_state = hidden_states + residual
                    aux_hidden_states.append(aux_hidden_state)
                hidden_states, residual = layer(positions, hidden_states, residual)
""" + tail + """
            hidden_states, _ = self.norm(hidden_states, residual)
            return hidden_states, aux_hidden_states

    class DeepseekV2ForCausalLM(nn.Module, SupportsEagle3):
        model_cls = DeepseekV2Model

        def __init__(self, vllm_config):
            self.model = self.model_cls(vllm_config=vllm_config)

    class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):
        pass
"""


def tree(tmp_path, llama: str, *, post_loop: bool = False):
    return write_tree(tmp_path, "vllm", {
        f"{MODELS}/interfaces.py": INTERFACES, f"{MODELS}/registry.py": REGISTRY, f"{MODELS}/llama.py": llama,
        f"{MODELS}/deepseek_v2.py": deepseek(post_loop), f"{MODELS}/qwen3.py": QWEN3, f"{MODELS}/qwen2.py": QWEN2,
    }, strip_first_newline=True)


def test_before_each_layer_never_reaches_the_last_layer_output(tmp_path):
    fact = final_layer_capture(tree(tmp_path, LLAMA_BEFORE))
    before = fact["before_final"]
    assert set(before) == {"LlamaForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "Qwen3ForCausalLM"}
    assert before["LlamaForCausalLM"]["model"] == "LlamaModel"  # composed through a helper's `return LlamaModel(...)`
    assert before["LlamaForCausalLM"]["how"] == "only each layer's input: idx in self.aux_hidden_state_layers"
    assert before["LlamaForCausalLM"]["location"] == f"{MODELS}/llama.py:{line(LLAMA_BEFORE, 'if idx in')}"
    assert before["DeepseekV3ForCausalLM"]["model"] == "DeepseekV2Model"  # inherited, then `model_cls = DeepseekV2Model`
    assert before["Qwen3ForCausalLM"]["model"] == "Qwen2Model"  # composed, then inherited across files
    assert not fact["unresolved"]
    assert "LlamaForCausalLM" not in fact  # top-level keys are the classes that reach it (the release finder's key)


def test_the_mixin_after_each_layer_and_a_post_loop_capture_reach_it(tmp_path):
    fact = final_layer_capture(tree(tmp_path, LLAMA_MIXIN, post_loop=True))
    assert fact["LlamaForCausalLM"] == {
        "model": "LlamaModel", "location": f"{MODELS}/llama.py:{line(LLAMA_MIXIN, 'idx + 1')}",
        "how": "also the last layer's output: self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, residual)"}
    assert fact["DeepseekV3ForCausalLM"]["how"] == "also the last layer's output: self.end_layer in self.aux_hidden_state_layers"
    assert fact["DeepseekV3ForCausalLM"]["location"] == f"{MODELS}/deepseek_v2.py:{line(deepseek(True), 'self.end_layer in')}"
    assert set(fact["before_final"]) == {"Qwen3ForCausalLM"}


def test_a_target_whose_capture_cannot_be_found_is_unresolved_not_guessed(tmp_path):
    t = write_tree(tmp_path, "vllm", {
        f"{MODELS}/interfaces.py": INTERFACES, f"{MODELS}/registry.py": REGISTRY.replace("llama", "wrapper"),
        f"{MODELS}/wrapper.py": """
            class LlamaForCausalLM(nn.Module, SupportsEagle3):
                def __init__(self, vllm_config):
                    self.language_model = init_vllm_registered_model(vllm_config)
        """,
    })
    fact = final_layer_capture(t)
    assert fact["unresolved"] == {"LlamaForCausalLM": "no class with an aux capture found in its bases or its body"}
    assert fact["before_final"] == {}
