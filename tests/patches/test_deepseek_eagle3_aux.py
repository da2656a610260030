"""vllm-deepseek-eagle3-aux (patches/vllm/deepseek_eagle3_aux.py): the code before and after, what is
refused, and that the patched forward really records the state entering each configured layer."""

from __future__ import annotations

from compat.patches.vllm import deepseek_eagle3_aux
from patch_testing import PP_LAST, FakeDecoder, PatchTest, code, patched_forward, run_forward

DEEPSEEK_BEFORE = '''
    from itertools import islice

    from .interfaces import SupportsLoRA, SupportsPP


    class DeepseekV2Model(nn.Module):
        def __init__(self, config):
            self.layers = make_layers(config)

        def forward(self, input_ids, positions, intermediate_tensors, inputs_embeds=None):
            if get_pp_group().is_first_rank:
                hidden_states = self.embed_input_ids(input_ids)
                residual = None
            else:
                hidden_states = intermediate_tensors["hidden_states"]
                residual = intermediate_tensors["residual"]

            for layer in islice(self.layers, self.start_layer, self.end_layer):
                hidden_states, residual = layer(positions, hidden_states, residual)

            if not get_pp_group().is_last_rank:
                return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})

            hidden_states, _ = self.norm(hidden_states, residual)
            return hidden_states


    class DeepseekV2ForCausalLM(nn.Module, SupportsPP,
                                SupportsLoRA):
        def embed_input_ids(self, input_ids):
            return self.model.embed_input_ids(input_ids)

        def forward(self, input_ids, positions):
            return self.model(input_ids, positions)
'''

DEEPSEEK_AFTER = '''
    from itertools import islice

    from .interfaces import SupportsLoRA, SupportsPP, SupportsEagle3


    class DeepseekV2Model(nn.Module):
        def __init__(self, config):
            self.layers = make_layers(config)
            self.aux_hidden_state_layers: tuple[int, ...] = ()  # compat patch vllm-deepseek-eagle3-aux

        def forward(self, input_ids, positions, intermediate_tensors, inputs_embeds=None):
            if get_pp_group().is_first_rank:
                hidden_states = self.embed_input_ids(input_ids)
                residual = None
            else:
                hidden_states = intermediate_tensors["hidden_states"]
                residual = intermediate_tensors["residual"]

            aux_hidden_states = []  # compat patch vllm-deepseek-eagle3-aux
            for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer):
                # compat patch vllm-deepseek-eagle3-aux: the residual stream entering layer idx (at layer 0 there is no residual yet)
                if idx in self.aux_hidden_state_layers:
                    aux_hidden_states.append(hidden_states if residual is None else hidden_states + residual)
                hidden_states, residual = layer(positions, hidden_states, residual)

            if not get_pp_group().is_last_rank:
                return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})

            hidden_states, _ = self.norm(hidden_states, residual)
            if len(aux_hidden_states) > 0:  # compat patch vllm-deepseek-eagle3-aux
                return hidden_states, aux_hidden_states
            return hidden_states


    class DeepseekV2ForCausalLM(nn.Module, SupportsPP,
                                SupportsLoRA, SupportsEagle3):
        def embed_input_ids(self, input_ids):
            return self.model.embed_input_ids(input_ids)

        def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
            # compat patch vllm-deepseek-eagle3-aux: EAGLE-3 reads the residual stream entering these layers.
            self.model.aux_hidden_state_layers = layers

        def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
            # compat patch vllm-deepseek-eagle3-aux: the default ids every EAGLE-3 target uses.
            num_layers = len(self.model.layers)
            return (2, num_layers // 2, num_layers - 3)

        def forward(self, input_ids, positions):
            return self.model(input_ids, positions)
'''



class TestDeepseekEagle3Aux(PatchTest):
    PATCH = deepseek_eagle3_aux
    ROLE = "model"

    def test_gains_the_interface_and_the_capture(self):
        self.assert_patch(DEEPSEEK_BEFORE, DEEPSEEK_AFTER)

    def test_the_slice_loop_of_0_10_1_is_enumerated_too(self):
        old_loop = "islice(self.layers, self.start_layer, self.end_layer)"
        self.assert_patch(DEEPSEEK_BEFORE.replace(old_loop, "self.layers[self.start_layer:self.end_layer]"),
                          DEEPSEEK_AFTER.replace(old_loop, "self.layers[self.start_layer:self.end_layer]"))

    def test_a_fixed_file_is_left_alone(self):
        self.assert_fixed(DEEPSEEK_AFTER)

    def test_a_half_fixed_file_is_refused(self):
        half = DEEPSEEK_BEFORE.replace("SupportsLoRA):", "SupportsLoRA, SupportsEagle3):")
        self.assert_refused(half, r"part of the EAGLE-3 support \(interface\)")

    def test_an_unexpected_forward_is_refused(self):
        other = DEEPSEEK_BEFORE.replace("for layer in islice", "for block in islice")
        self.assert_refused(other, "decoder-layer loop", step="transform")

    def test_a_file_without_the_classes_is_refused(self):
        self.assert_refused("class DeepseekV2Model:\n    pass\n", "no top-level class DeepseekV2ForCausalLM")

    def test_no_interfaces_import_to_extend_is_refused(self):
        self.assert_refused(DEEPSEEK_BEFORE.replace("from .interfaces import", "from .other import"),
                            "cannot import SupportsEagle3", step="transform")


def test_the_patched_forward_collects_the_state_entering_each_layer_including_layer_0():
    out = deepseek_eagle3_aux.transform("model", code(DEEPSEEK_BEFORE), {})
    forward = patched_forward(out, get_pp_group=lambda: PP_LAST, IntermediateTensors=dict)
    decoder = FakeDecoder(6, aux=(0, 2, 5))
    hidden, aux = run_forward(forward, decoder)
    assert aux == decoder.expected_aux(1.0) and len(aux) == 3
    assert aux[0] == 1.0  # layer 0: the embeddings (residual is None there)
    plain = FakeDecoder(6)
    assert run_forward(forward, plain) == hidden  # no aux layers: the single tensor, as before
