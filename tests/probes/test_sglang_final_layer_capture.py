"""The SGLang `final_layer_capture` probe on fake model trees shaped like the real releases' forwards."""

from __future__ import annotations

from compat.probes.sglang.final_layer_capture import final_layer_capture
from probe_trees import line, write_tree

MODELS = "sglang/srt/models"

SET_IDS = """
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]
"""

# SGLang Llama: the input of layer i, passed to the decoder layer (0.5.x); +1 on the drafter's ids.
LLAMA = """
class LlamaModel(nn.Module):
    def forward(self, input_ids, positions, forward_batch):
        aux_hidden_states = AuxHiddenStateList()
        for i in range(self.start_layer, self.end_layer):
            hidden_states = self.layers[i](positions, hidden_states, forward_batch,
                                           capture_output=aux_hidden_states.capture if i in self.layers_to_capture else None)
        return hidden_states, aux_hidden_states


class LlamaForCausalLM(nn.Module):
    def __init__(self, config):
        self.model = LlamaModel(config)
""" + SET_IDS.replace("\n    ", "\n    ") + """

EntryClass = [LlamaForCausalLM]
"""

# gpt-oss from 0.5.17 (sglang#32334): the last layer's output too, after the loop.
GPT_OSS = """
class GptOssModel(nn.Module):
    def forward(self, input_ids, positions, forward_batch):
        for i in range(self.start_layer, self.end_layer):
            hidden_states = self.layers[i](positions, hidden_states, forward_batch,
                                           capture_output=aux_hidden_states.capture if i in self.layers_to_capture else None)
        if self.end_layer in self.layers_to_capture:
            aux_hidden_states.append(hidden_states)
        return hidden_states


class GptOssForCausalLM(nn.Module):
    def __init__(self, config):
        self.model = GptOssModel(config)
""" + SET_IDS + """

EntryClass = GptOssForCausalLM
"""

# Qwen2-MoE (0.5.23): the ids index self.layers, so id n is out of range before any forward runs.
QWEN2_MOE = """
class Qwen2MoeModel(nn.Module):
    def set_eagle3_layers_to_capture(self, layers_to_capture):
        self.layers_to_capture = layers_to_capture
        for layer_id in self.layers_to_capture:
            setattr(self.layers[layer_id], "_is_layer_to_capture", True)


class Qwen2MoeForCausalLM(nn.Module):
    def __init__(self, config):
        self.model = Qwen2MoeModel(config)

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.model.set_eagle3_layers_to_capture([val + 1 for val in layer_ids])


EntryClass = Qwen2MoeForCausalLM
"""


def test_llama_stops_before_the_last_layer_gpt_oss_reaches_it(tmp_path):
    t = write_tree(tmp_path, "sglang", {f"{MODELS}/llama.py": LLAMA, f"{MODELS}/gpt_oss.py": GPT_OSS,
                                        f"{MODELS}/qwen2_moe.py": QWEN2_MOE}, strip_first_newline=True)
    fact = final_layer_capture(t)
    assert fact["GptOssForCausalLM"] == {"model": "GptOssModel", "location": f"{MODELS}/gpt_oss.py:{line(GPT_OSS, 'self.end_layer in')}",
                                         "how": "also the last layer's output: self.end_layer in self.layers_to_capture"}
    llama = fact["before_final"]["LlamaForCausalLM"]
    assert llama["model"] == "LlamaModel" and llama["how"] == "only each layer's input: i in self.layers_to_capture"
    qwen = fact["before_final"]["Qwen2MoeForCausalLM"]
    assert qwen["model"] == "Qwen2MoeModel" and "(id n is out of range)" in qwen["how"]
    assert qwen["location"] == f"{MODELS}/qwen2_moe.py:{line(QWEN2_MOE, 'setattr(')}"
